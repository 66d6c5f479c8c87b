package fastccs

import (
	"fmt"

	"github.com/meridian-kv/meridian/protocol/txn"
)

// watch asserts the invariants of spec §5.1 that the partitions' and clients' state shows at
// any moment (I1–I5, I8, I10 through I4, I14), and that the store still holds every version
// reads can select (pruning); it remembers the previous state for the
// monotonicity ones. Tests call check after every event.
type watch struct {
	sn  map[*Replica]int64
	svc map[*Replica]VC
	vc  map[*Client]VC
}

func newWatch() *watch {
	return &watch{sn: map[*Replica]int64{}, svc: map[*Replica]VC{}, vc: map[*Client]VC{}}
}

func (w *watch) check(reps []*Replica, clients []*Client) error {
	cts := map[txn.ID]VC{} // I5: every version of a committed transaction carries its one ct
	for _, r := range reps {
		i, own := r.slot, r.svc[r.slot]
		// I1: sn only grows; I2: every entry of svc only grows, svc[i] ≤ sn, and the commit
		// queue never holds svc[i]+1 (it would have been applied).
		if r.sn < w.sn[r] {
			return fmt.Errorf("I1: sn of partition %d went from %d to %d", r.self, w.sn[r], r.sn)
		}
		if prev := w.svc[r]; prev != nil && !prev.LessEq(r.svc) {
			return fmt.Errorf("I2: svc of partition %d went from %v to %v", r.self, prev, r.svc)
		}
		w.sn[r], w.svc[r] = r.sn, r.svc.Clone()
		if own > r.sn {
			return fmt.Errorf("I2: partition %d: svc[i] = %d beyond sn %d", r.self, own, r.sn)
		}
		if _, ok := r.ready[own+1]; ok {
			return fmt.Errorf("I2: partition %d: sn %d is ready but svc[i] = %d", r.self, own+1, own)
		}
		// I1 and I3: pending transactions have distinct sequence numbers above svc[i], and
		// their versions are pending with that number.
		sns := map[int64]txn.ID{}
		for id, p := range r.pending {
			if other, dup := sns[p.sn]; dup {
				return fmt.Errorf("I1: partition %d gave sn %d to %v and %v", r.self, p.sn, other, id)
			}
			sns[p.sn] = id
			if p.sn <= own || p.sn > r.sn {
				return fmt.Errorf("I3: partition %d: pending %v has sn %d, svc[i] %d, sn %d", r.self, id, p.sn, own, r.sn)
			}
			for _, v := range p.versions {
				if v.committed || v.ct[i] != p.sn {
					return fmt.Errorf("I3: partition %d: pending %v's version is committed %v with ct %v", r.self, id, v.committed, v.ct)
				}
			}
		}
		for sn := range r.ready {
			if sn <= own {
				return fmt.Errorf("I2: partition %d: sn %d still queued below svc[i] %d", r.self, sn, own)
			}
		}
		// I4 (partitions): svc_j[k] ≤ svc_k[k].
		for _, k := range reps {
			if r.svc[k.slot] > k.svc[k.slot] {
				return fmt.Errorf("I4: svc_%d[%d] = %d > svc_%d[%d] = %d", r.self, k.slot, r.svc[k.slot], k.self, k.slot, k.svc[k.slot])
			}
		}
		for key, kv := range r.keys {
			var last rank
			for _, v := range kv.list {
				// I14: committed versions of a key have distinct, increasing ranks: in one
				// datacenter, ct[owner].
				if !last.less(v.rank) || r.slots.DCs == 1 && v.rank != (rank{v.ct[i]}) {
					return fmt.Errorf("I14: key %s at partition %d: rank %v after %v (ct %v)", key, r.self, v.rank, last, v.ct)
				}
				last = v.rank
				if !v.committed || v.ct[i] > own && r.slots.DCs == 1 {
					return fmt.Errorf("I2: key %s at partition %d: version %v (committed %v) above svc[i] %d", key, r.self, v.ct, v.committed, own)
				}
				// Pruning: a version reads can still select (every listed one) is one the store
				// has not dropped (store.Store.Drop follows collect), with its value.
				if val, ok := r.env.Store().ValueOf(key, v.writer); !ok || string(val) != string(v.value) {
					return fmt.Errorf("pruning: key %s at partition %d: the store dropped %v's version (found %v), which reads can still select", key, r.self, v.writer, ok)
				}
				if ct, ok := cts[v.writer]; ok && !ct.Equal(v.ct) {
					return fmt.Errorf("I5: %v's versions carry %v and %v", v.writer, ct, v.ct)
				}
				cts[v.writer] = v.ct
			}
		}
	}
	for _, c := range clients {
		// I8: vc_c only grows; I4 (clients): vc_c[k] ≤ svc_k[k], which gives I10 once a WOT
		// returned (vc_c ≥ its ct).
		if prev := w.vc[c]; prev != nil && !prev.LessEq(c.vc) {
			return fmt.Errorf("I8: a client clock went from %v to %v", prev, c.vc)
		}
		w.vc[c] = c.vc.Clone()
		for _, k := range reps {
			if c.vc[k.slot] > k.svc[k.slot] {
				return fmt.Errorf("I4: vc_c[%d] = %d > svc_%d[%d] = %d", k.slot, c.vc[k.slot], k.self, k.slot, k.svc[k.slot])
			}
		}
	}
	return nil
}
