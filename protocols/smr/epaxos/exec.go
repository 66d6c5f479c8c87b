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
	if e := r.insts[root]; e == nil || e.status != Committed {
		return
	}
	t := &tarjan{r: r, index: map[Instance]int{}, low: map[Instance]int{}, onStack: map[Instance]bool{}}
	if t.visit(root) {
		return
	}
	r.waiters[t.blocker] = append(r.waiters[t.blocker], root)
	r.watchInstance(t.blocker, r.entry(t.blocker))
}

// tarjan is one search of the execution algorithm.
type tarjan struct {
	r       *Replica
	next    int
	index   map[Instance]int
	low     map[Instance]int
	onStack map[Instance]bool
	stack   []Instance
	blocker Instance
}

// visit searches from v, executing every component it completes; false if the search reached
// an uncommitted instance (t.blocker).
func (t *tarjan) visit(v Instance) bool {
	t.index[v], t.low[v] = t.next, t.next
	t.next++
	t.stack = append(t.stack, v)
	t.onStack[v] = true
	for _, w := range t.r.insts[v].Deps {
		we := t.r.insts[w]
		switch {
		case we != nil && we.status == Executed, t.r.forgotten(w):
			continue
		case we == nil || we.status != Committed:
			t.blocker = w
			return false
		}
		if _, seen := t.index[w]; !seen {
			if !t.visit(w) {
				return false
			}
			t.low[v] = min(t.low[v], t.low[w])
		} else if t.onStack[w] {
			t.low[v] = min(t.low[v], t.index[w])
		}
	}
	if t.low[v] == t.index[v] {
		k := len(t.stack) - 1
		for t.stack[k] != v {
			k--
		}
		scc := slices.Clone(t.stack[k:])
		t.stack = t.stack[:k]
		for _, m := range scc {
			t.onStack[m] = false
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
