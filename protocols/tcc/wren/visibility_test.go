package wren

import (
	"slices"
	"testing"

	"github.com/meridian-kv/meridian/internal/tccscript"
	"github.com/meridian-kv/meridian/protocol/txn"
	"github.com/meridian-kv/meridian/protocols/tcc"
)

func wantVisibility(t *testing.T, w *tccscript.World, p int, want ...tcc.Visibility) {
	t.Helper()
	got, dropped := replica(w, p).DrainVisibility(nil)
	if dropped != 0 || !slices.Equal(got, want) {
		t.Fatalf("visibility at partition %d = %+v (%d dropped), want %+v", p, got, dropped, want)
	}
}

// TestWrenVisibilityLagOneStabInterval is W1 timed: a WOT of a alone commits at 9 ms, with
// LST = 5 ms; the stabilization round at 10 ms makes LST = 10 ms ≥ ct: lag 1 ms.
func TestWrenVisibilityLagOneStabInterval(t *testing.T) {
	w := tccscript.New(t, New, NewClient, 2, nil)
	c1 := w.Client()
	wantVisibility(t, w, 0) // turns tracking on
	wantVisibility(t, w, 1)
	gossip(w) // t = 5ms
	w.Advance(4_000)
	h := c1.Write(map[string]string{"a": "a1"})
	w.DeliverAll()
	if !h.Done() || h.WriteResult().Status != txn.Committed {
		t.Fatalf("WOT: %+v", h.WriteResult())
	}
	wantVisibility(t, w, 0) // installed, ct 9ms > LST 5ms
	w.Advance(1_000)        // t = 10ms: stabilization
	w.DeliverAll()
	wantLST(t, w, 10_000)
	wantVisibility(t, w, 0, tcc.Visibility{Tx: h.ID(), CommitUs: 9_000, VisibleUs: 10_000, Participants: 1, DecidedUs: 9_000})
	wantVisibility(t, w, 1)
}

// TestWrenVisibilityLagLateDecision: a two-partition WOT is decided at 9 ms and installed at
// its coordinator then; the decision reaches the other participant at 12 ms. The stabilization
// round at 15 ms makes it visible at both: lags of 6 ms at the coordinator and 3 ms at the other
// participant; the WOT is visible everywhere 6 ms after its decision. Nothing is reported
// before tracking starts.
func TestWrenVisibilityLagLateDecision(t *testing.T) {
	w := tccscript.New(t, New, NewClient, 2, nil)
	c1 := w.Client()
	gossip(w) // t = 5ms
	c1.Write(map[string]string{"a": "a0", "b": "b0"})
	w.DeliverAll()
	wantVisibility(t, w, 0) // turns tracking on; h0 was installed before
	wantVisibility(t, w, 1)
	w.Advance(4_000) // t = 9ms
	h := c1.Write(map[string]string{"a": "a1", "b": "b1"})
	coord := int(w.InFlight()[0].To.Node)
	other := 1 - coord
	deliverAllBut(w, is[*Decision])
	if !h.Done() || h.WriteResult().Status != txn.Committed {
		t.Fatalf("WOT: %+v", h.WriteResult())
	}
	w.Advance(1_000) // t = 10ms: the other participant's prepare holds LST below ct
	deliverAllBut(w, is[*Decision])
	if lst := replica(w, coord).LST(); lst >= c1.Lib().(*Client).hwtC {
		t.Fatalf("LST %d reached ct while a participant is prepared", lst)
	}
	wantVisibility(t, w, 0) // h0 became visible at 10ms, but was installed before tracking
	wantVisibility(t, w, 1)
	w.Advance(2_000) // t = 12ms: the decision lands
	w.DeliverAll()
	w.Advance(3_000) // t = 15ms: stabilization
	w.DeliverAll()
	wantVisibility(t, w, coord, tcc.Visibility{Tx: h.ID(), CommitUs: 9_000, VisibleUs: 15_000, Participants: 2, DecidedUs: 9_000})
	wantVisibility(t, w, other, tcc.Visibility{Tx: h.ID(), CommitUs: 12_000, VisibleUs: 15_000})
}
