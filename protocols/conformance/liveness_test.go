package conformance

import (
	"math"
	"slices"
	"testing"

	"github.com/meridian-kv/meridian/protocol"
	"github.com/meridian-kv/meridian/protocol/txn"
	"github.com/meridian-kv/meridian/sim"
	"github.com/meridian-kv/meridian/tools/bench"
	"github.com/meridian-kv/meridian/verify/history"
	"github.com/meridian-kv/meridian/workload"
)

const crashStartUs, crashEndUs = 1_000_000, 4_000_000

// outageRun runs proto with the given datacenters down during [1 s, 4 s) and returns the
// transactions of the surviving datacenters that started inside the outage (after the first
// 200 ms of it, so nothing started before it is counted). Clients write one key each, with no
// read and no client hop, so a transaction's duration is its commit latency. Closed-loop clients
// of a blocked protocol start nothing during the outage; wantBlocked checks those.
func outageRun(t *testing.T, topoName, proto string, down ...string) (*bench.Result, []history.Txn) {
	t.Helper()
	opts := uncontended(t, topoName, "1ms")
	opts.Workload = workload.TYCSB{Keys: 1_000_000, Distribution: workload.DistUniform, OpsPerTxn: 1, ReadRatio: 0}
	opts.Params["gt"] = "100ms"
	if proto == "mf" || proto == "helios-0" {
		delete(opts.Params, "gt")
	}
	isDown := map[string]bool{}
	for _, dc := range down {
		isDown[dc] = true
		opts.Faults = append(opts.Faults, sim.Fault{Kind: sim.Outage, DC: dc, StartUs: crashStartUs, EndUs: crashEndUs})
	}
	opts.KeepHistory = true
	res := run(t, opts, proto)
	if res.Unfinished > 0 {
		t.Fatalf("%s: %d transactions never finished after the outage ended", proto, res.Unfinished)
	}
	var during []history.Txn
	for _, tx := range res.History.Txns {
		if !isDown[tx.DC] && tx.StartUs >= crashStartUs+200_000 && tx.StartUs < crashEndUs-500_000 {
			during = append(during, tx)
		}
	}
	return res, during
}

// wantBlocked requires that no surviving datacenter decides anything between 300 ms into the
// outage and its end, that some transaction was waiting through it, and that everything
// commits once the outage is over.
func wantBlocked(t *testing.T, res *bench.Result, down ...string) {
	t.Helper()
	waited := 0
	for _, tx := range res.History.Txns {
		if slices.Contains(down, tx.DC) {
			continue
		}
		if tx.EndUs >= crashStartUs+300_000 && tx.EndUs < crashEndUs {
			t.Fatalf("%s at %s decided (%s) at %d µs, while %v were down", tx.ID, tx.DC, tx.Status, tx.EndUs, down)
		}
		if tx.StartUs < crashEndUs && tx.EndUs >= crashEndUs {
			waited++
			if tx.Status != txn.Committed {
				t.Errorf("%s at %s: %s (%s), want committed after the outage", tx.ID, tx.DC, tx.Status, tx.Reason)
			}
		}
	}
	if waited == 0 {
		t.Fatal("no transaction waited through the outage")
	}
}

// TestOutageBlocksHelios0AndMF is §7.2.5: while C is down, no transaction at A or B commits
// under Helios-0 or Message Futures; they all commit once C is back.
func TestOutageBlocksHelios0AndMF(t *testing.T) {
	for _, proto := range []string{"helios-0", "helios-b", "mf"} {
		t.Run(proto, func(t *testing.T) {
			res, _ := outageRun(t, "table4.1", proto, "C")
			wantBlocked(t, res, "C")
		})
	}
}

// TestOutageHelios1KeepsCommitting is §7.2.5 for Helios-1 (GT = 100 ms): with C down, A commits
// at about q + 110 (the η wait 15 + GT − 5) and B at about q + 120 (15 + GT + 5).
func TestOutageHelios1KeepsCommitting(t *testing.T) {
	_, during := outageRun(t, "table4.1", "helios-1", "C")
	if len(during) == 0 {
		t.Fatal("no transaction started during the outage")
	}
	want := map[string]float64{"A": 110, "B": 120}
	sum, count := map[string]float64{}, map[string]float64{}
	for _, tx := range during {
		if tx.Status != txn.Committed || tx.EndUs >= crashEndUs {
			t.Fatalf("%s at %s: %s at %d µs, want committed while C is down", tx.ID, tx.DC, tx.Status, tx.EndUs)
		}
		sum[tx.DC] += float64(tx.EndUs-tx.StartUs) / 1000
		count[tx.DC]++
	}
	for dc, w := range want {
		if mean := sum[dc] / count[dc]; math.Abs(mean-w) > 2 {
			t.Errorf("%s: mean latency during the outage %.1f ms, want %.0f ± 2", dc, mean, w)
		}
	}
}

// TestOutageTwoDatacenters is the 5-datacenter row of §7.2.5: with I and S down, Helios-1
// blocks (η needs four live datacenters other than the failed one) and Helios-2 keeps
// committing, at roughly its usual latency plus GT.
func TestOutageTwoDatacenters(t *testing.T) {
	t.Run("helios-1-blocks", func(t *testing.T) {
		res, _ := outageRun(t, "aws-helios", "helios-1", "I", "S")
		wantBlocked(t, res, "I", "S")
	})
	t.Run("helios-2-commits", func(t *testing.T) {
		_, during := outageRun(t, "aws-helios", "helios-2", "I", "S")
		if len(during) == 0 {
			t.Fatal("no transaction started during the outage")
		}
		for _, tx := range during {
			lat := float64(tx.EndUs-tx.StartUs) / 1000
			if tx.Status != txn.Committed || tx.EndUs >= crashEndUs || lat > 400 {
				t.Fatalf("%s at %s: %s after %.0f ms, want committed during the outage within 400 ms", tx.ID, tx.DC, tx.Status, lat)
			}
		}
	})
}

// TestHeliosGraceTimeNack is §7.2.6 (Helios-1, 3 datacenters 20 ms apart, GT = 30 ms): when the
// preparing record reaches both others after GT, both NACK and the transaction aborts; with a
// 10 ms delay it commits at about q + 20.
func TestHeliosGraceTimeNack(t *testing.T) {
	for _, tc := range []struct {
		name    string
		extraUs int64
		want    txn.Status
	}{
		{"late-aborts", 30_000, txn.Aborted},
		{"on-time-commits", 0, txn.Committed},
	} {
		t.Run(tc.name, func(t *testing.T) {
			opts := uncontended(t, "table4.1", "1ms")
			topo := opts.Topology
			for a := range topo.RTTMs {
				for b := range topo.RTTMs[a] {
					if a != b {
						topo.RTTMs[a][b] = 20
					}
				}
			}
			opts.Workload = workload.TYCSB{Keys: 1_000_000, Distribution: workload.DistUniform, OpsPerTxn: 1, ReadRatio: 0}
			opts.Params = protocol.Params{"interval": "1ms", "gt": "30ms", "latency_ms": "10,10,10"}
			if tc.extraUs > 0 {
				for _, peer := range []string{"B", "C"} {
					opts.Faults = append(opts.Faults, sim.Fault{Kind: sim.Slow, DC: "A", Peer: peer, StartUs: 1_000_000, EndUs: 1_200_000, ExtraUs: tc.extraUs})
				}
			}
			opts.KeepHistory = true
			res := run(t, opts, "helios-1")
			seen := 0
			for _, tx := range res.History.Txns {
				if tx.DC != "A" || tx.StartUs < 1_000_000 || tx.StartUs >= 1_150_000 {
					continue
				}
				seen++
				if tx.Status != tc.want {
					t.Errorf("%s started at %d µs: %s (%s), want %s", tx.ID, tx.StartUs, tx.Status, tx.Reason, tc.want)
				}
				if tc.want == txn.Aborted && tx.Reason != txn.ReasonNoAcks {
					t.Errorf("%s aborted for %q, want %q", tx.ID, tx.Reason, txn.ReasonNoAcks)
				}
			}
			if seen == 0 {
				t.Fatal("no transaction at A in the slow window")
			}
		})
	}
}
