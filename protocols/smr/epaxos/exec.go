package epaxos

import (
	"cmp"
	"slices"
)

// execute runs the paper's execution algorithm from the committed instance root: a depth-first
// search over committed, not yet executed instances along deps, which finds strongly connected
// components with Tarjan's algorithm and executes each as soon as it is complete. Tarjan completes a component only after every component reachable from it, so
// components run in reverse topological order. If the search reaches an instance that is not
// committed here, it stops; components completed before that are executed already (everything
// they reach is), and root waits for the blocking instance, which is watched so that it gets
// recovered if it stays uncommitted. When the blocker commits, root is searched again. So every
// committed instance is either executed or waits on an uncommitted one: execution cannot
// deadlock, whatever cycles the graph has.
func (r *Replica) execute(root Instance) {
	e := r.insts[root]
	if e == nil || e.status != Committed {
		return
	}
	r.search++
	t := &tarjan{r: r, gen: r.search}
	if t.visit(root, e) {
		return
	}
	r.waiters[t.blocker] = append(r.waiters[t.blocker], root)
	r.watchInstance(t.blocker, r.entry(t.blocker))
}

// tarjan is one search of the execution algorithm. Its per-instance marks live in the entries
// (visit), tagged with the search's generation, so a search allocates nothing per instance.
type tarjan struct {
	r       *Replica
	gen     uint64
	next    int
	stack   []Instance
	blocker Instance
}

// visitMarks are an entry's Tarjan marks for the search of generation gen.
type visitMarks struct {
	gen        uint64
	index, low int
	onStack    bool
}

// visit searches from v (entry e), executing every component it completes; false if the search
// reached an uncommitted instance (t.blocker).
func (t *tarjan) visit(v Instance, e *entry) bool {
	e.marks = visitMarks{gen: t.gen, index: t.next, low: t.next, onStack: true}
	t.next++
	t.stack = append(t.stack, v)
	for _, w := range e.Deps {
		we := t.r.insts[w]
		switch {
		case we != nil && we.status == Executed, t.r.forgotten(w):
			continue
		case we == nil || we.status != Committed:
			t.blocker = w
			return false
		}
		if we.marks.gen != t.gen {
			if !t.visit(w, we) {
				return false
			}
			e.marks.low = min(e.marks.low, we.marks.low)
		} else if we.marks.onStack {
			e.marks.low = min(e.marks.low, we.marks.index)
		}
	}
	if e.marks.low == e.marks.index {
		k := len(t.stack) - 1
		for t.stack[k] != v {
			k--
		}
		scc := slices.Clone(t.stack[k:])
		t.stack = t.stack[:k]
		for _, m := range scc {
			t.r.insts[m].marks.onStack = false
		}
		t.r.executeComponent(scc)
	}
	return true
}

// executeComponent executes the members of one strongly connected component by (seq, replica,
// slot), handing each command to P-CC.
func (r *Replica) executeComponent(scc []Instance) {
	slices.SortFunc(scc, func(a, b Instance) int {
		return cmp.Or(cmp.Compare(r.insts[a].Seq, r.insts[b].Seq), a.cmp(b))
	})
	r.stats.SCCSizes[len(scc)]++
	for _, inst := range scc {
		e := r.insts[inst]
		e.status = Executed
		r.executed(inst)
		if !e.noop {
			r.exec.Deliver(e.cmd)
		}
	}
}
