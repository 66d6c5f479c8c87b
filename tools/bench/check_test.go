package bench

import (
	"reflect"
	"testing"

	"github.com/meridian-kv/meridian/protocol/txn"
	"github.com/meridian-kv/meridian/verify/checker"
	"github.com/meridian-kv/meridian/verify/history"
)

// TestCheckMatchesChecker: check, which checks agreeing replicas through the first alone, reports
// exactly what checker.Check reports, for passing and failing histories and agreeing and
// diverging replicas.
func TestCheckMatchesChecker(t *testing.T) {
	t1, t2, t3 := txn.NewID(1, 1), txn.NewID(2, 1), txn.NewID(3, 1)
	committed := func(id txn.ID, reads []txn.Read, writes ...string) history.Txn {
		return history.Txn{ID: id, DC: "A", Client: "A/0", Status: txn.Committed, Reads: reads, Writes: writes}
	}
	replicas := func(orders ...map[string][]txn.ID) []history.Replica {
		var reps []history.Replica
		for i, o := range orders {
			reps = append(reps, history.Replica{Name: string(rune('A' + i)), VersionOrder: o})
		}
		return reps
	}
	serial := []history.Txn{committed(t1, nil, "x"), committed(t2, []txn.Read{{Key: "x", Version: t1}}, "y")}
	serialOrder := map[string][]txn.ID{"x": {t1}, "y": {t2}}
	skew := []history.Txn{ // write skew: G2
		committed(t1, []txn.Read{{Key: "x"}}, "y"),
		committed(t2, []txn.Read{{Key: "y"}}, "x"),
	}
	skewOrder := map[string][]txn.ID{"x": {t2}, "y": {t1}}
	lost := append(serial[:2:2], committed(t3, nil, "z")) // no replica installed t3's write
	for _, c := range []struct {
		name string
		h    history.History
		ok   bool
	}{
		{"serializable, replicas agree", history.History{Txns: serial, Replicas: replicas(serialOrder, serialOrder, serialOrder)}, true},
		{"G2, replicas agree", history.History{Txns: skew, Replicas: replicas(skewOrder, skewOrder)}, false},
		{"lost commit at every replica", history.History{Txns: lost, Replicas: replicas(serialOrder, serialOrder)}, false},
		{"replicas diverge", history.History{Txns: serial, Replicas: replicas(serialOrder, map[string][]txn.ID{"x": {t1}})}, false},
		{"one replica", history.History{Txns: skew, Replicas: replicas(skewOrder)}, false},
	} {
		for _, opts := range []checker.Options{{}, {SnapshotsPerDC: true}} {
			var log history.Log
			for _, t := range c.h.Txns {
				log.Append(t)
			}
			got, want := check(&log, c.h.Replicas, opts), checker.Check(&c.h, opts)
			if want.OK != c.ok {
				t.Fatalf("%s: checker.Check says OK %t, the test expects %t: %v", c.name, want.OK, c.ok, want)
			}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("%s (%+v): check reports\n%v\nchecker.Check\n%v", c.name, opts, got, want)
			}
		}
	}
}
