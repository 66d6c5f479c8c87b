package bench

import (
	"strings"
	"testing"

	_ "github.com/meridian-kv/meridian/protocols/all"
	"github.com/meridian-kv/meridian/workload"
)

// shortTPCC is TPC-C at CI scale: small tables (so that districts, customers and stock are
// shared), 4 clients per datacenter, 5 virtual seconds with the first measured out.
func shortTPCC(mix string, seed uint64) Options {
	o := TPCCDefaults()
	w := workload.DefaultTPCC()
	w.Districts, w.CustomersPerDistrict, w.Items, w.Mix = 3, 30, 200, mix
	o.Workload, o.ClientsPerDC, o.DurationUs, o.WarmupUs, o.Seed = w, 4, 5_000_000, 1_000_000, seed
	return o
}

// TestTPCCOnEveryReadWriteProtocol runs both mixes, a few seeds each, on the serializable
// full-replication protocols: every run is good (checker and TPC-C's consistency conditions),
// finishes every transaction, commits some of each type and reads back what it created.
// Paxos-CP runs 10 virtual seconds: its latency grows to seconds under contention (repro e3.1),
// and in 5 s seed 1 committed 1 new order of 1 attempted with aligned timers and none of none
// with the timers' random phases.
func TestTPCCOnEveryReadWriteProtocol(t *testing.T) {
	for _, p := range []string{"helios-0", "helios-1", "mf", "rc", "2pc-paxos", "paxos-commit", "ogre"} {
		for seed := uint64(1); seed <= 2; seed++ {
			mix := []string{"write", "ro70"}[seed%2]
			o := shortTPCC(mix, seed)
			if p == "paxos-commit" {
				o.DurationUs = 10_000_000
			}
			res, err := Run(o, p)
			if err != nil {
				t.Fatal(err)
			}
			if err := res.Problem(); err != nil {
				t.Fatalf("%v\nreplay: %s", err, res.Replay)
			}
			m := res.Metrics.(*workload.TPCCMetrics)
			no := m.Types["new_order"]
			t.Logf("%s seed %d %s: %s; new_order %d/%d attempts, payment %d, checked %+v",
				p, seed, mix, res.Checker.Summary(), no.Committed, no.Attempts, m.Types["payment"].Committed, m.Checked)
			if res.Unfinished != 0 || no.Committed == 0 || m.Checked.Orders == 0 || m.Checked.OrderLines < 5*m.Checked.Orders {
				t.Fatalf("%s seed %d: %d unfinished, %d new orders committed, checked %+v\nreplay: %s", p, seed, res.Unfinished, no.Committed, m.Checked, res.Replay)
			}
		}
	}
}

// runBroken runs o, whose workload has a deliberately broken transaction, on 2pc-paxos, checks
// that the checker saw nothing wrong (the broken transactions are serializable all the same),
// and returns the run and its problem.
func runBroken(t *testing.T, o Options) (*Result, error) {
	t.Helper()
	res, err := Run(o, "2pc-paxos")
	if err != nil {
		t.Fatal(err)
	}
	if !res.Checker.OK {
		t.Fatalf("the checker should see nothing wrong: %s", res.Checker.Summary())
	}
	return res, res.Problem()
}

// TestTPCCCatchesPaymentSkippingDistrictYTD: a Payment that forgets its district's YTD
// commits as a serializable transaction, so only TPC-C's condition 1 catches it.
func TestTPCCCatchesPaymentSkippingDistrictYTD(t *testing.T) {
	o := shortTPCC("write", 1)
	w := o.Workload.(workload.TPCC)
	w.Unsafe = workload.UnsafePaymentSkipsDistrictYTD
	o.Workload = w
	_, err := runBroken(t, o)
	if err == nil || !strings.Contains(err.Error(), "condition 1") {
		t.Fatalf("want a condition 1 violation, got %v", err)
	}
	t.Log(err)
}
