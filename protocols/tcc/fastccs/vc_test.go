package fastccs

import "testing"

// TestVCOrder checks ≤, max and "does not cover" (spec §2.2, A7), in particular on incomparable
// vectors, where a strict component-wise < would wrongly say "covers".
func TestVCOrder(t *testing.T) {
	svc, ctm := VC{2, 1}, VC{1, 2} // incomparable
	if svc.Covers(ctm) || ctm.Covers(svc) {
		t.Error("incomparable vectors cover each other")
	}
	if !svc.Covers(VC{2, 0}) || !svc.Covers(svc) || !(VC{2, 0}).LessEq(svc) || (VC{3, 0}).LessEq(svc) {
		t.Error("≤ is wrong on comparable vectors")
	}
	m := svc.Clone()
	m.MergeFrom(ctm)
	if !m.Equal(VC{2, 2}) || !m.Covers(svc) || !m.Covers(ctm) {
		t.Errorf("max(%v, %v) = %v", svc, ctm, m)
	}
	// The nil vector is the zero vector of any length.
	var zero VC
	if !zero.LessEq(svc) || !svc.Covers(zero) || !zero.Equal(VC{0, 0}) || zero.Covers(VC{0, 1}) {
		t.Error("the nil vector is not the zero vector")
	}
	a := VC{1, 5}
	a.MergeFrom(VC{3, 2, 9})
	if !a.Equal(VC{3, 5}) || len(a) != 2 {
		t.Errorf("merge gave %v", a)
	}
	if s := (Slots{DCs: 3, Partitions: 4}); s.Len() != 12 || s.Of(0, 2) != 6 || s.Of(2, 2) != 8 {
		t.Error("slots")
	}
}
