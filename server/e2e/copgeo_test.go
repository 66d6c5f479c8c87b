package e2e

import (
	"bytes"
	"errors"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestCOPGeoPipelineRestarts runs COP's global-scale mode as real processes (`meridian ml geo`:
// four sources and a centre over TCP with the WAN of Fig. 6.1 emulated) and fails the centre
// twice: once during collection, after it logged 7 of the 16 batches and before it acknowledged
// the 7th, and once in epoch 2 of training, before that epoch's checkpoint. The restarted centre
// recovers the batches from its admission log (the sources resend the rest, and the 7th, which
// it recognises), resumes after epoch 1, and its model is bit-identical to the serial reference.
func TestCOPGeoPipelineRestarts(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary and runs real processes")
	}
	t.Parallel()
	bin := meridianBinary(t)
	base := freeBasePort(t, 5)
	var addrs []string
	for i := range 5 {
		addrs = append(addrs, "127.0.0.1:"+strconv.Itoa(base+i))
	}
	common := []string{"--addrs", strings.Join(addrs, ","), "--samples", "4000", "--batch", "250", "--collect", "50ms", "--resend", "200ms"}
	dir := t.TempDir()
	centre := func(extra ...string) (string, int) {
		args := append(append([]string{"ml", "geo", "centre", "--dir", dir, "--epochs", "3", "--workers", "2"}, common...), extra...)
		out, err := exec.Command(bin, args...).CombinedOutput()
		code := 0
		if exit := (*exec.ExitError)(nil); errors.As(err, &exit) {
			code = exit.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		return string(out), code
	}
	var sources []*exec.Cmd
	var outs []*bytes.Buffer
	for i := range 4 {
		cmd := exec.Command(bin, append([]string{"ml", "geo", "source", "--index", strconv.Itoa(i)}, common...)...)
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		sources, outs = append(sources, cmd), append(outs, &out)
	}
	defer func() {
		for _, s := range sources {
			s.Process.Kill()
		}
	}()

	out, code := centre("--fail-after-batches", "7")
	if code != 3 || !strings.Contains(out, "failing after 7 batches") {
		t.Fatalf("first centre: exit %d\n%s", code, out)
	}
	out, code = centre("--fail-in-epoch", "2")
	if code != 3 || !strings.Contains(out, "7 batches recovered") || !strings.Contains(out, "16 batches admitted") || !strings.Contains(out, "epoch 1 done") {
		t.Fatalf("second centre: exit %d\n%s", code, out)
	}
	out, code = centre("--verify")
	if code != 0 || !strings.Contains(out, "16 batches recovered") || !strings.Contains(out, "resuming after epoch 1") ||
		strings.Contains(out, "epoch 1 done") || !strings.Contains(out, "bit-identical true") {
		t.Fatalf("third centre: exit %d\n%s", code, out)
	}
	for i, s := range sources {
		done := make(chan error, 1)
		go func() { done <- s.Wait() }()
		select {
		case err := <-done:
			if err != nil || !strings.Contains(outs[i].String(), "shipped and acknowledged") {
				t.Errorf("source %d: %v\n%s", i, err, outs[i])
			}
		case <-time.After(30 * time.Second):
			t.Fatalf("source %d did not finish\n%s", i, outs[i])
		}
	}
}
