package workload

import (
	"testing"

	"github.com/meridian-kv/meridian/protocol/txn"
	"github.com/meridian-kv/meridian/protocols/tcc"
)

// TestVisibilityJoin: per-partition lags count by local commit time in the window; a WOT's lag
// is its last participant's visibility minus its coordinator's decision, counted once all its
// participants reported (in any order) and by decision time in the window.
func TestVisibilityJoin(t *testing.T) {
	v := newVisibility(1_000, 10_000)
	t1, t2, t3 := txn.NewID(1, 1), txn.NewID(2, 1), txn.NewID(3, 1)
	for _, ev := range []tcc.Visibility{
		{Tx: t1, CommitUs: 2_000, VisibleUs: 5_000},                                    // participant first
		{Tx: t2, CommitUs: 500, VisibleUs: 1_500, Participants: 1, DecidedUs: 500},     // before the window
		{Tx: t1, CommitUs: 1_500, VisibleUs: 3_000, Participants: 3, DecidedUs: 1_000}, // coordinator
		{Tx: t3, CommitUs: 4_000, VisibleUs: 4_000, Participants: 1, DecidedUs: 4_000}, // visible on commit
		{Tx: t1, CommitUs: 2_500, VisibleUs: 9_000},
	} {
		v.add(ev)
	}
	if v.measured != 4 || v.part.TotalCount() != 4 || v.part.Max() < 6_500 || v.part.Min() != 0 {
		t.Fatalf("partition lags: %d measured, count %d, min %d, max %d", v.measured, v.part.TotalCount(), v.part.Min(), v.part.Max())
	}
	if v.wot.TotalCount() != 2 || !v.wot.ValuesAreEquivalent(v.wot.Max(), 8_000) || v.wot.Min() != 0 {
		t.Fatalf("WOT lags: count %d, min %d, max %d; want 0 and 8000", v.wot.TotalCount(), v.wot.Min(), v.wot.Max())
	}
	if len(v.joins) != 0 {
		t.Fatalf("joins left: %v", v.joins)
	}
	v.add(tcc.Visibility{Tx: txn.NewID(4, 1), CommitUs: 2_000, VisibleUs: 3_000})
	if len(v.joins) != 1 {
		t.Fatal("a WOT waiting for its coordinator's event was not kept")
	}
}
