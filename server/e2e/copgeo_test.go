package e2e

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/meridian-kv/meridian/ml/geo"
	"github.com/meridian-kv/meridian/ml/svm"
	"github.com/meridian-kv/meridian/ml/train"
	"github.com/meridian-kv/meridian/protocol"
	"github.com/meridian-kv/meridian/server/cluster"
)

// TestCOPGeoClusterRestarts runs COP's global-scale mode as real processes started by
// `meridian cluster up --protocol cop-geo` (four sources and a centre over TCP with the WAN of
// Fig. 6.1 emulated) and kills the centre with SIGKILL while it collects, after it admitted and
// logged some of the 16 batches. The restarted centre recovers them from its admission log, the
// sources resend the rest, and the final model's hash, read from the centre's /status, is the
// serial reference's on the canonical order (computed here, outside the cluster).
// MERIDIAN_LONG=1 also kills it during training, on a larger dataset: the restarted centre
// resumes after the last checkpointed epoch and re-runs the current one.
func TestCOPGeoClusterRestarts(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary and runs real processes")
	}
	t.Parallel()
	t.Run("collecting", func(t *testing.T) {
		copGeoRestart(t, protocol.Params{"samples": "4000", "batch": "250", "collect": "150ms", "resend": "200ms", "epochs": "3"},
			regexp.MustCompile(`collecting: ([4-9]|1[0-2]) of 16`), regexp.MustCompile(`centre: ([4-9]|1[0-5]) batches recovered`))
	})
	if os.Getenv("MERIDIAN_LONG") == "" {
		return
	}
	t.Run("training", func(t *testing.T) {
		copGeoRestart(t, protocol.Params{"samples": "40000", "batch": "2000", "collect": "20ms", "resend": "200ms", "epochs": "8"},
			regexp.MustCompile(`training: epoch [2-5] of 8 checkpointed`), regexp.MustCompile(`centre: resuming after epoch [2-7]\n`))
	})
}

// copGeoRestart brings up a cop-geo cluster with params, kills its centre once its /status
// matches killAt, restarts it, checks its log for recovered, and compares its final model
// with the serial reference.
func copGeoRestart(t *testing.T, params protocol.Params, killAt, recovered *regexp.Regexp) {
	bin := meridianBinary(t)
	dir := t.TempDir()
	base := freeBasePort(t, geo.Sources+1)
	args := []string{"cluster", "up", "--dir", dir, "--protocol", geo.ProtocolName, "--topology", "cop-fig6.1", "--base-port", strconv.Itoa(base)}
	for k, v := range params {
		args = append(args, "--set", k+"="+v)
	}
	if out, err := exec.Command(bin, args...).CombinedOutput(); err != nil {
		t.Fatalf("cluster up: %v\n%s", err, out)
	}
	t.Cleanup(func() {
		if err := cluster.Down(dir, io.Discard); err != nil {
			t.Errorf("cluster down: %v", err)
		}
	})
	cfg, err := cluster.Load(filepath.Join(dir, "cluster.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	centre := cfg.Nodes[geo.CentreNode]
	awaitStatus(t, centre.MetricsAddr, killAt, 2*time.Minute)
	if err := cluster.Kill(dir, centre.Name); err != nil {
		t.Fatal(err)
	}
	if err := cluster.StartNode(context.Background(), dir, bin, centre.Name); err != nil {
		t.Fatal(err)
	}
	status := awaitStatus(t, centre.MetricsAddr, regexp.MustCompile(`^done: `), 5*time.Minute)
	logText, _ := os.ReadFile(filepath.Join(dir, "logs", centre.Name+".log"))
	if !recovered.Match(logText) {
		t.Fatalf("the restarted centre's log does not match %q:\n%s", recovered, logText)
	}
	o, err := geo.ParseParams(params, geo.Sources+1)
	if err != nil {
		t.Fatal(err)
	}
	shares, err := o.Shares()
	if err != nil {
		t.Fatal(err)
	}
	ref, err := geo.SerialReference(shares, o.BatchSamples, train.Options{Epochs: o.Epochs, Lambda: svm.DefaultLambda})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(status, "model sha256 "+ref.ModelSHA256) {
		t.Fatalf("centre: %s\nwant the serial reference's model sha256 %s; log:\n%s", status, ref.ModelSHA256, logText)
	}
	out, err := exec.Command(bin, "cluster", "status", "--dir", dir).CombinedOutput()
	if err != nil || strings.Count(string(out), "shipped and acknowledged") != geo.Sources {
		t.Fatalf("cluster status: %v\n%s", err, out)
	}
}

// awaitStatus polls a pipeline node's /status until it matches re, and returns it.
func awaitStatus(t *testing.T, metricsAddr string, re *regexp.Regexp, within time.Duration) string {
	t.Helper()
	deadline := time.Now().Add(within)
	last := ""
	for time.Now().Before(deadline) {
		if resp, err := http.Get(fmt.Sprintf("http://%s/status", metricsAddr)); err == nil {
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if last = strings.TrimSpace(string(body)); re.MatchString(last) {
				return last
			}
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("/status of %s did not match %q within %s; last: %q", metricsAddr, re, within, last)
	return ""
}
