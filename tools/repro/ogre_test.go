package repro

import (
	"math"
	"strings"
	"testing"

	"github.com/meridian-kv/meridian/protocol/txn"
	"github.com/meridian-kv/meridian/verify/history"
)

// ogreRunners are the Ogre experiments at a chosen scale.
var ogreRunners = map[string]func(Env, ogreScale) (*Report, error){
	"ogre-e1": runOgreE1, "ogre-e2": runOgreE2, "ogre-e3": runOgreE3, "ogre-e4": runOgreE4, "ogre-e5": runOgreE5, "ogre-e6": runOgreE6,
}

// TestOgreExperimentsRun runs every Ogre experiment at ogreTiny end to end: each is registered,
// measures every system without an error (every run passes the checker), sets claims with
// verdicts, and its series can be written as CSV, PNG and HTML. It proves the machinery, not the
// verdicts, except one that holds by construction: read-only transactions take the client's
// round trip whatever the outage.
func TestOgreExperimentsRun(t *testing.T) {
	if testing.Short() {
		t.Skip("runs about 60 short simulations")
	}
	dir := t.TempDir()
	for name, run := range ogreRunners {
		t.Run(name, func(t *testing.T) {
			t.Parallel() // independent simulations: use every core go test gives the package
			r, err := run(Env{Seed: 1}, ogreTiny)
			if err != nil {
				t.Fatal(err)
			}
			checkReport(t, dir, name, r)
			if name == "ogre-e5" {
				last := r.Claims[len(r.Claims)-1]
				if !strings.HasPrefix(last.Claim, "read-only") || last.Verdict != Matches {
					t.Errorf("%s: %s: %s", last.Claim, last.Ours, last.Verdict)
				}
			}
		})
	}
}

// TestOgreSweepShared: E1, E4 and E6 read one sweep, measured once per seed and scale.
func TestOgreSweepShared(t *testing.T) {
	if testing.Short() {
		t.Skip("runs 36 short simulations")
	}
	sc := ogreTiny
	sc.sweepUs, sc.warmupUs = 600_000, 200_000
	runs := 0
	env := Env{Seed: 5, Progress: func(string) { runs++ }}
	a, err := ogreSweep(env, sc)
	if err != nil {
		t.Fatal(err)
	}
	if want := len(ogreProtocols) * len(ogreClients); runs != want {
		t.Fatalf("the sweep ran %d simulations, want %d", runs, want)
	}
	b, _ := ogreSweep(env, sc)
	if runs != len(ogreProtocols)*len(ogreClients) || a["ogre"][0].res != b["ogre"][0].res {
		t.Error("the second experiment ran Fig. 5.3's simulations again")
	}
	for _, p := range ogreProtocols {
		if got := len(a[p]); got != len(ogreClients) {
			t.Errorf("%s: %d points, want %d", p, got, len(ogreClients))
		}
		for _, pt := range a[p] {
			if (pt.res.History != nil) != (p == "ogre") {
				t.Errorf("%s at %d clients: history kept %v", p, pt.clients, pt.res.History != nil)
			}
		}
	}
}

// TestReadBeforeDeps counts the read-before dependencies of a hand-made history: key x goes
// t1 → t4; t2 and t3 read t1's version of x, so t4 carries both; t4 also read x itself, which does
// not count; t5 read the initial version of y, which nobody overwrites; t3's read of z's initial
// version counts for t6, which writes z.
func TestReadBeforeDeps(t *testing.T) {
	id := func(c, s uint32) txn.ID { return txn.ID(uint64(c)<<32 | uint64(s)) }
	t1, t2, t3, t4, t5, t6 := id(1, 1), id(2, 1), id(3, 1), id(4, 1), id(5, 1), id(6, 1)
	h := &history.History{
		Txns: []history.Txn{
			{ID: t1, Status: txn.Committed, Writes: []string{"x"}},
			{ID: t2, Status: txn.Committed, Reads: []txn.Read{{Key: "x", Version: t1}}, Writes: []string{"w"}},
			{ID: t3, Status: txn.Committed, Reads: []txn.Read{{Key: "x", Version: t1}, {Key: "z", Version: txn.None}}},
			{ID: t4, Status: txn.Committed, Reads: []txn.Read{{Key: "x", Version: t1}}, Writes: []string{"x"}},
			{ID: t5, Status: txn.Committed, Reads: []txn.Read{{Key: "y", Version: txn.None}}},
			{ID: t6, Status: txn.Committed, Writes: []string{"z"}},
			{ID: id(7, 1), Status: txn.Aborted, Reads: []txn.Read{{Key: "x", Version: t1}}, Writes: []string{"q"}},
		},
		Replicas: []history.Replica{{Name: "V", VersionOrder: map[string][]txn.ID{"x": {t1, t4}, "w": {t2}, "z": {t6}}}},
	}
	perTxn, bytes := readBeforeDeps(h)
	if want := 3.0 / 6; math.Abs(perTxn-want) > 1e-9 {
		t.Errorf("read-before ids per committed transaction %g, want %g", perTxn, want)
	}
	// 4 writes (x, w, x, z) and 3 ids of 8 bytes over 6 committed transactions.
	if want := (4.0 + 24) / 6; math.Abs(bytes-want) > 1e-9 {
		t.Errorf("extra bytes %g, want %g", bytes, want)
	}
}

// TestOgreOrphans: the orphans are C's read-write transactions begun before the crash and
// finished at the recovery; a transaction conflicts with them unless it only reads what they
// only read.
func TestOgreOrphans(t *testing.T) {
	sc := ogreScale{crashUs: 10, outageUs: 100}
	h := &history.History{Txns: []history.Txn{
		{DC: "C", StartUs: 5, EndUs: 100, Reads: []txn.Read{{Key: "r"}}, Writes: []string{"w"}},
		{DC: "C", StartUs: 5, EndUs: 9, Writes: []string{"done"}},                        // finished before the crash
		{DC: "C", StartUs: 5, EndUs: 100, Snapshot: true, Reads: []txn.Read{{Key: "s"}}}, // read-only
		{DC: "V", StartUs: 5, EndUs: 100, Writes: []string{"v"}},                         // not C
	}}
	o := ogreOrphans(h, sc)
	if o.n != 1 || !o.reads["r"] || !o.written["w"] || len(o.keys()) != 2 {
		t.Fatalf("orphans %+v", o)
	}
	for _, tc := range []struct {
		t    history.Txn
		want bool
	}{
		{history.Txn{Reads: []txn.Read{{Key: "r"}}}, false},
		{history.Txn{Reads: []txn.Read{{Key: "w"}}}, true},
		{history.Txn{Writes: []string{"r"}}, true},
		{history.Txn{Writes: []string{"w"}}, true},
		{history.Txn{Reads: []txn.Read{{Key: "done"}}, Writes: []string{"v"}}, false},
	} {
		if got := o.conflicts(tc.t); got != tc.want {
			t.Errorf("conflicts(%+v) = %v, want %v", tc.t, got, tc.want)
		}
	}
}
