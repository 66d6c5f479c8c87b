package e2e

import (
	"bytes"
	"errors"
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/meridian-kv/meridian/protocols/tcc"
	"github.com/meridian-kv/meridian/server/cluster"
)

// runMeridian runs the meridian binary with args and stdin, and returns its output and exit
// status.
func runMeridian(t *testing.T, stdin string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	cmd := exec.Command(meridianBinary(t), args...)
	cmd.Stdin = strings.NewReader(stdin)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	var exit *exec.ExitError
	switch {
	case errors.As(err, &exit):
		code = exit.ExitCode()
	case err != nil:
		t.Fatal(err)
	}
	return out.String(), errOut.String(), code
}

// TestTCCClientCommand brings up a one-datacenter, two-partition FastCCS cluster and drives it
// with `meridian client --cluster`: a write-only transaction over both partitions, read back by
// another invocation (a new session, which sees the write once it is stable), and a session
// from standard input that reads its own write.
func TestTCCClientCommand(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a real cluster")
	}
	t.Parallel()
	bin := meridianBinary(t)
	dir := t.TempDir()
	topo, topoFile := oneDCTopology(t, dir)
	const partitions = 2
	cfg := bringUp(t, cluster.GeneratePartitioned(topo, topoFile, "fastccs", dir, freeBasePort(t, partitions), partitions), dir, bin)
	if p, q := tcc.PartitionOf("k1", partitions), tcc.PartitionOf("k2", partitions); p == q {
		t.Fatalf("k1 and k2 share partition %d; the test wants a transaction over both", p)
	}
	client := []string{"client", "--cluster", cfg.Path, "--timeout", "5s"}

	out, stderr, code := runMeridian(t, "", append(client, "write", "k1=hello", "k2=world")...)
	m := regexp.MustCompile(`^committed (t\d+\.1)\n$`).FindStringSubmatch(out)
	if code != 0 || m == nil {
		t.Fatalf("write: exit %d\n%s%s", code, out, stderr)
	}
	writer := m[1]

	// A new session reads from a stable snapshot: the write shows once every partition has
	// heard of it.
	want := regexp.MustCompile(`^k1 = hello \(writer ` + regexp.QuoteMeta(writer) + `\)\nk2 = world \(writer ` +
		regexp.QuoteMeta(writer) + `\)\nrounds: [12]\n$`)
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		out, stderr, code = runMeridian(t, "", append(client, "--dc", "dc0", "read", "k1", "k2")...)
		if code == 0 && want.MatchString(out) {
			break
		}
		if code != 0 || time.Now().After(deadline) {
			t.Fatalf("read: exit %d, want k1 and k2 written by %s\n%s%s", code, writer, out, stderr)
		}
	}

	// One session: its read sees its own write, whatever the partitions' stable time.
	out, stderr, code = runMeridian(t, "# a comment\nwrite k1=again k3=more\n\nread k3 k1 nothing\n", append(client, "session")...)
	m = regexp.MustCompile(`^committed (t\d+)\.1\nk3 = more \(writer (t\d+)\.1\)\nk1 = again \(writer (t\d+)\.1\)\nnothing = "" \(writer init\)\nrounds: [12]\n$`).FindStringSubmatch(out)
	if code != 0 || m == nil || m[1] != m[2] || m[1] != m[3] {
		t.Fatalf("session: exit %d\n%s%s", code, out, stderr)
	}

	for _, args := range [][]string{
		{"--dc", "mars", "read", "k1"},
		{"write", "k1=a", "k1=b"},
		{"write", "novalue"},
		{"read"},
	} {
		if _, stderr, code := runMeridian(t, "", append(client, args...)...); code != 2 || strings.Count(stderr, "\n") != 1 {
			t.Errorf("client %q: exit %d, want 2 with one line\n%s", args, code, stderr)
		}
	}
}
