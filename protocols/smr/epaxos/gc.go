package epaxos

import "slices"

// Garbage collection of executed instances. Every replica keeps, per instance space, the slot up
// to which it has executed every instance (executedUpTo), and reports that vector to the others
// (Progress) whenever it grew, and every second anyway, so lost reports are repaired. Once every
// replica reports a space executed up to slot s, no replica will ever need the instances up to s
// again, and gc_after later (param, default 10 s) this replica forgets them: their entries, their
// places in the per-key index, their commands.
//
// Why forgetting is safe. (1) Ordering: a command γ that interferes with a forgotten X no longer
// finds X in the index, but X was executed at every replica before it was forgotten anywhere, and
// γ is pre-accepted after that, so γ is not committed yet and can execute nowhere before X: every
// replica executes X first. (2) Coverage: an instance that a forgotten writer covered is
// reachable from it, so it executed before it everywhere, and is forgettable too. (3) Late
// messages: every message about a slot at or below the forgotten watermark is ignored (a Commit
// is still acknowledged), so a duplicate cannot bring a forgotten instance back, and a dependency
// on a forgotten instance counts as executed.

// gcState is one replica's garbage-collection bookkeeping, per instance space.
type gcState struct {
	executedUpTo []uint64          // every slot up to this is executed here
	executedOver []map[uint64]bool // executed slots above executedUpTo
	peerUpTo     [][]uint64        // each replica's last reported executedUpTo (this one's too)
	forgotUpTo   []uint64          // slots up to this are forgotten here
	scheduled    []uint64          // slots up to this are scheduled to be forgotten
	due          []gcDue
	reported     []uint64 // executedUpTo as last reported
	reportAtUs   int64    // next unconditional report
}

// gcDue forgets the slots of space up to upTo from atUs on.
type gcDue struct {
	space int
	upTo  uint64
	atUs  int64
}

// reportEveryUs is the period of the unconditional Progress report.
const reportEveryUs = 1_000_000

func newGCState(n int) gcState {
	g := gcState{executedUpTo: make([]uint64, n), executedOver: make([]map[uint64]bool, n), peerUpTo: make([][]uint64, n),
		forgotUpTo: make([]uint64, n), scheduled: make([]uint64, n), reported: make([]uint64, n)}
	for i := range n {
		g.executedOver[i] = map[uint64]bool{}
		g.peerUpTo[i] = make([]uint64, n)
	}
	return g
}

// forgotten reports whether inst is at or below its space's forgotten watermark.
func (r *Replica) forgotten(inst Instance) bool { return inst.Slot <= r.gc.forgotUpTo[inst.Replica] }

// executed records that inst was executed here.
func (r *Replica) executed(inst Instance) {
	g, sp := &r.gc, int(inst.Replica)
	if inst.Slot <= g.executedUpTo[sp] {
		return
	}
	g.executedOver[sp][inst.Slot] = true
	for g.executedOver[sp][g.executedUpTo[sp]+1] {
		g.executedUpTo[sp]++
		delete(g.executedOver[sp], g.executedUpTo[sp])
	}
}

// onProgress merges a replica's report and schedules what every replica has executed.
func (r *Replica) onProgress(from int, upTo []uint64) {
	g := &r.gc
	for sp, s := range upTo {
		g.peerUpTo[from][sp] = max(g.peerUpTo[from][sp], s)
	}
	r.scheduleGC()
}

// scheduleGC schedules, gc_after from now, the forgetting of every slot that every replica has
// executed and that is not scheduled yet.
func (r *Replica) scheduleGC() {
	g := &r.gc
	copy(g.peerUpTo[r.self], g.executedUpTo)
	for sp := range r.n {
		all := g.peerUpTo[0][sp]
		for _, peer := range g.peerUpTo[1:] {
			all = min(all, peer[sp])
		}
		if all > g.scheduled[sp] {
			g.scheduled[sp] = all
			g.due = append(g.due, gcDue{space: sp, upTo: all, atUs: r.env.NowUs() + r.gcAfterUs})
		}
	}
}

// collect reports this replica's progress when it grew (or a second passed) and forgets what is
// due, oldest first.
func (r *Replica) collect(now int64) {
	g := &r.gc
	if !slices.Equal(g.reported, g.executedUpTo) || now >= g.reportAtUs {
		copy(g.reported, g.executedUpTo)
		g.reportAtUs = now + reportEveryUs
		r.broadcast(&Progress{UpTo: slices.Clone(g.executedUpTo)})
		r.scheduleGC()
	}
	for len(g.due) > 0 && now >= g.due[0].atUs {
		d := g.due[0]
		g.due = g.due[1:]
		for s := g.forgotUpTo[d.space] + 1; s <= d.upTo; s++ {
			inst := Instance{Replica: uint32(d.space), Slot: s}
			if e := r.insts[inst]; e != nil {
				r.unindex(inst, e)
				delete(r.insts, inst)
			}
			delete(r.announced, inst) // every replica executed it: no Commit is still needed
		}
		g.forgotUpTo[d.space] = max(g.forgotUpTo[d.space], d.upTo)
	}
}
