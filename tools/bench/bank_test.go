package bench

import (
	"strings"
	"testing"

	_ "github.com/meridian-kv/meridian/protocols/all"
	"github.com/meridian-kv/meridian/workload"
)

// shortBank is Bank at CI scale: 4 transfer clients and one audit client per datacenter, an
// audit every second, 5 virtual seconds.
func shortBank(seed uint64) Options {
	o := BankDefaults()
	w := workload.DefaultBank()
	w.Accounts, w.AuditIntervalMs = 200, 1000
	o.Workload, o.ClientsPerDC, o.DurationUs, o.WarmupUs, o.Seed = w, 4, 5_000_000, 1_000_000, seed
	return o
}

// TestBankOnEveryReadWriteProtocol: every run is good, finishes every transaction, and audits
// the total during the run and at quiescence.
func TestBankOnEveryReadWriteProtocol(t *testing.T) {
	for _, p := range []string{"helios-0", "helios-1", "mf", "rc", "2pc-paxos", "paxos-commit", "ogre"} {
		for seed := uint64(1); seed <= 2; seed++ {
			res, err := Run(shortBank(seed), p)
			if err != nil {
				t.Fatal(err)
			}
			if err := res.Problem(); err != nil {
				t.Fatalf("%v\nreplay: %s", err, res.Replay)
			}
			m := res.Metrics.(*workload.BankMetrics)
			t.Logf("%s seed %d: %s; %d audits of %d attempts; V aborts %.1f%%", p, seed, res.Checker.Summary(), m.Audits, m.AuditAttempts, 100*res.DCs[0].AbortRate)
			if res.Unfinished != 0 || !m.FinalAudit || res.DCs[0].Committed == 0 {
				t.Fatalf("%s seed %d: %d unfinished, final audit %t, %d committed\nreplay: %s", p, seed, res.Unfinished, m.FinalAudit, res.DCs[0].Committed, res.Replay)
			}
		}
	}
}

// TestBankCatchesTransferLosingCent: transfers that lose a cent are serializable, so only the
// audits catch them.
func TestBankCatchesTransferLosingCent(t *testing.T) {
	o := shortBank(1)
	w := o.Workload.(workload.Bank)
	w.Unsafe = workload.UnsafeTransferLosesCent
	o.Workload = w
	res, err := runBroken(t, o)
	if err == nil || !strings.Contains(err.Error(), "total balance") {
		t.Fatalf("want a wrong total, got %v", err)
	}
	m := res.Metrics.(*workload.BankMetrics)
	if len(m.BadTotals) < 2 {
		t.Fatalf("want audits during the run and at quiescence to see it, got %q", m.BadTotals)
	}
	t.Log(m.BadTotals)
}

// TestCalibrateBankAccounts: starting far from the target, the bisection lands in 10-20%
// aborts with fewer accounts and lists its probes, the last of which is the run returned.
func TestCalibrateBankAccounts(t *testing.T) {
	o := shortBank(1)
	w := o.Workload.(workload.Bank)
	w.Accounts, w.AuditClientsPerDC = 5000, 0
	o.Workload = w
	res, err := CalibrateBankAccounts(o, "2pc-paxos", 0.10, 0.20)
	if err != nil {
		t.Fatal(err)
	}
	m := res.Metrics.(*workload.BankMetrics)
	t.Logf("probes %+v", m.Calibration)
	if rate := res.AbortRate(); rate < 0.10 || rate > 0.20 || len(m.Calibration) < 2 || m.Accounts >= 5000 ||
		m.Calibration[len(m.Calibration)-1].Accounts != m.Accounts {
		t.Fatalf("abort rate %.3f with %d accounts after probes %+v", rate, m.Accounts, m.Calibration)
	}
}
