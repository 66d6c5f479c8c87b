package ogre

import (
	"math"
	"os"
	"testing"

	"github.com/meridian-kv/meridian/protocol"
	"github.com/meridian-kv/meridian/protocol/txn"
	"github.com/meridian-kv/meridian/sim"
	"github.com/meridian-kv/meridian/tools/bench"
	"github.com/meridian-kv/meridian/workload"
)

// TestOgreOrphanedPending is spec §4.6's orphaned pending transaction: C coordinates T1
// (writes x) and fails right after A and B voted for it, before their votes reach it. T1 stays
// pending at A and B for the whole outage (they know nothing of C's decision), so T2, which
// reads x, is voted down by A and B (pending-conflict) however long C stays down, while T3 on
// other keys commits with the majority A, B. When C recovers, its coordinator — whose state
// survived, as the seed's client persisted the transaction — finds T1's timeout passed, decides
// abort (spec A4) and broadcasts it; T1 leaves the pending sets and T4, which reads x like T2,
// commits.
func TestOgreOrphanedPending(t *testing.T) {
	w := abc(t)
	const crashMs, recoverMs = 6, 3000
	const hopMs = 5 // one way between any two datacenters
	w.Hold = func(from, to int, sendMs int64, _ protocol.Message) int64 {
		sent, arrives := from == dcC && sendMs >= crashMs, to == dcC && sendMs+hopMs >= crashMs
		if from != to && (sent || arrives) && sendMs < recoverMs {
			return math.MaxInt64 / 2 // lost: C is down
		}
		return 0
	}
	w.Request(dcC, "T1", nil, []string{"x"})
	w.RunTo(crashMs)
	pending := func(dc int) bool { _, ok := w.Replicas[dc].(*Replica).pending[w.ID("T1")]; return ok }
	if !pending(dcA) || !pending(dcB) {
		t.Fatalf("T1 pending at A %v, at B %v; want both\n%s", pending(dcA), pending(dcB), w.Trace())
	}
	for i, at := range []int64{100, 1000, 2500} { // early and late in the outage
		w.RunTo(at)
		name := []string{"T2", "T2b", "T2c"}[i]
		w.Request(dcA, name, []string{"x="}, []string{"z"})
		w.RunTo(at + 50)
		if o, _ := w.Outcome(name); o.Status != txn.Aborted || o.Reason != ReasonPendingConflict {
			t.Errorf("%s at %d ms (C down): %+v, want aborted (pending-conflict)", name, at, o)
		}
		if !pending(dcA) || !pending(dcB) {
			t.Fatalf("%d ms: T1 no longer pending at A or B while C is down", at)
		}
	}
	w.Request(dcB, "T3", []string{"q="}, []string{"r"})
	w.RunTo(2700)
	committed(t, w, "T3")
	w.RunTo(recoverMs)
	if _, decided := w.Outcome("T1"); decided {
		t.Fatalf("T1 decided while C was down\n%s", w.Trace())
	}
	w.Send(dcC) // C's first housekeeping after recovery: T1's timeout has passed
	w.RunTo(recoverMs + 50)
	if o, _ := w.Outcome("T1"); o.Status != txn.Aborted || o.Reason != ReasonTimeout {
		t.Fatalf("T1 after C recovered: %+v, want aborted (timeout)\n%s", o, w.Trace())
	}
	if pending(dcA) || pending(dcB) {
		t.Fatalf("T1 still pending after C recovered\n%s", w.Trace())
	}
	w.Request(dcA, "T4", []string{"x="}, []string{"z"})
	w.RunTo(recoverMs + 100)
	committed(t, w, "T4")
}

// orphanProbe wraps T-YCSB to sample, every second of the run, how many transactions that the
// failed datacenter's replica began coordinating before crashUs are pending at the others: its
// orphans.
type orphanProbe struct {
	workload.TYCSB
	failed  int
	crashUs int64
	samples *[]int
}

type orphanRun struct {
	workload.Run
	probe orphanProbe
}

func (p orphanProbe) NewRun(info workload.RunInfo) (workload.Run, error) {
	run, err := p.TYCSB.NewRun(info)
	return orphanRun{run, p}, err
}

func (p orphanRun) Tick(replicas []protocol.Replica, nowUs int64) {
	failed := replicas[p.probe.failed].(*Replica)
	orphans := 0
	for i, rep := range replicas {
		if r, ok := rep.(*Replica); ok && i != p.probe.failed {
			for id := range r.pending {
				if c := failed.coords[id]; c != nil && c.deadlineUs-failed.timeoutUs < p.probe.crashUs {
					orphans++
				}
			}
		}
	}
	*p.probe.samples = append(*p.probe.samples, orphans)
	p.Run.Tick(replicas, nowUs)
}

// TestOgreOrphansMeasured measures §4.6 on aws-helios (E5's setting at a smaller scale; with
// MERIDIAN_LONG=1 E5's: 60 clients, C down from 15 s to 40 s, then 10 s up): C's replica fails
// with transactions in flight; every second it counts, at the four others, the pending
// transactions C coordinates — its orphans. They must stay pending for the whole outage (no
// replica decides for C: the paper's behaviour, no termination protocol) and be gone within
// two seconds of C's recovery, when C's coordinators decide (abort on their timeout or commit
// on the retransmitted votes) and broadcast.
func TestOgreOrphansMeasured(t *testing.T) {
	opts := bench.Defaults()
	opts.ClientsPerDC, opts.DurationUs, opts.WarmupUs = 6, 12_000_000, 1_000_000
	crashUs, recoverUs := int64(3_000_000), int64(9_000_000)
	if os.Getenv("MERIDIAN_LONG") != "" {
		opts.ClientsPerDC, opts.DurationUs, crashUs, recoverUs = 12, 50_000_000, 15_000_000, 40_000_000
	}
	opts.Faults = []sim.Fault{{Kind: sim.Outage, DC: "C", StartUs: crashUs, EndUs: recoverUs}}
	var samples []int
	opts.Workload = orphanProbe{TYCSB: opts.Workload.(workload.TYCSB), failed: 2, crashUs: crashUs, samples: &samples}
	if opts.Topology.DCs[2] != "C" {
		t.Fatalf("aws-helios's third datacenter is %s", opts.Topology.DCs[2])
	}
	res, err := bench.Run(opts, "ogre")
	if err != nil {
		t.Fatal(err)
	}
	if err := res.Problem(); err != nil {
		t.Fatal(err)
	}
	// samples[i] is taken at i s (the first at 0).
	during := samples[crashUs/1_000_000+1 : recoverUs/1_000_000+1]
	minDuring, maxDuring := during[0], during[0]
	for _, n := range during {
		minDuring, maxDuring = min(minDuring, n), max(maxDuring, n)
	}
	after := samples[recoverUs/1_000_000+2]
	t.Logf("C's orphans pending at the other replicas, per second: %v", samples[:opts.DurationUs/1_000_000+1])
	t.Logf("while C is down: %d to %d; two seconds after its recovery: %d", minDuring, maxDuring, after)
	if minDuring == 0 || minDuring != maxDuring {
		t.Errorf("C's orphans while it is down: %v; want the same non-zero count throughout", during)
	}
	if after != 0 {
		t.Errorf("%d orphans pending two seconds after C recovered", after)
	}
}
