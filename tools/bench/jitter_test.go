package bench

import (
	"bytes"
	"crypto/sha256"
	"fmt"
	"testing"

	"github.com/meridian-kv/meridian/verify/history"
)

// historyHash runs proto with opts and hashes what it observed: the history (JSON Lines, with
// the version order) and the per-datacenter results.
func historyHash(t *testing.T, opts Options, proto string) [32]byte {
	t.Helper()
	opts.KeepHistory = true
	res, err := Run(opts, proto)
	if err != nil {
		t.Fatal(err)
	}
	if !res.Checker.OK {
		t.Fatalf("%s: %s\nparameters: %s", proto, res.Checker.Summary(), res.Replay)
	}
	var b bytes.Buffer
	if err := history.WriteJSONL(&b, res.History); err != nil {
		t.Fatal(err)
	}
	fmt.Fprintf(&b, "%+v %+v", res.Sim, res.DCs)
	return sha256.Sum256(b.Bytes())
}

// TestJitterCorrelation: the correlation time changes a jittered run and nothing else. Runs are
// deterministic with it, and without jitter (the zero-jitter latency model) it changes no byte.
func TestJitterCorrelation(t *testing.T) {
	for _, proto := range []string{"helios-0", "mf"} {
		t.Run(proto, func(t *testing.T) {
			opts := Defaults()
			opts.DurationUs, opts.WarmupUs = 3_000_000, 500_000
			with := func(jitter float64, corrUs int64) Options {
				o := opts
				o.Jitter, o.JitterCorrelationUs = jitter, corrUs
				return o
			}
			if historyHash(t, with(0, 0), proto) != historyHash(t, with(0, 1_000_000), proto) {
				t.Error("without jitter, a correlation time of 1 s changed the run")
			}
			a := historyHash(t, with(1, 100_000), proto)
			if a != historyHash(t, with(1, 100_000), proto) {
				t.Error("two runs with a correlation time of 100 ms differ")
			}
			if a == historyHash(t, with(1, 0), proto) {
				t.Error("with jitter, correlation times 100 ms and 0 gave the same run")
			}
		})
	}
}
