package checker

import (
	"cmp"
	"container/heap"
	"fmt"
	"math/bits"
	"slices"
	"strings"

	"github.com/meridian-kv/meridian/protocol/txn"
)

// buildOrders derives every key's version order <_k from the replicas, numbers its versions and
// counts a WOT of unknown outcome that a replica installed as committed. Each replica's order is
// first cleaned of versions it should not hold (reported as TCCVersionOrder). A key held by one
// replica takes its order; a key held by several (geo-replication) takes their common order if
// they agree, and otherwise their merge: a topological order of "a directly before b in some
// replica", ties broken by first appearance (replica, then position), after reporting the
// disagreement (TCCDiverged). Orders that contradict each other are merged anyway, breaking each
// contradiction at the earliest remaining version, so that the other oracles still run.
func (c *tccChecker) buildOrders() {
	type holding struct {
		key, rep int32
		order    []txn.ID
	}
	type undeclared struct {
		key string
		holding
	}
	// One pass over the replicas. Keys no transaction declared are numbered after the others,
	// sorted, so that reports come in the same order on every run. An empty order holds nothing.
	var held []holding
	var extra []undeclared
	for i, rep := range c.h.replicas {
		for key, order := range rep.VersionOrder {
			switch k, ok := c.keys.Find(key); {
			case len(order) == 0:
			case ok:
				held = append(held, holding{k, int32(i), order})
			default:
				extra = append(extra, undeclared{key, holding{-1, int32(i), order}})
			}
		}
	}
	slices.SortFunc(extra, func(a, b undeclared) int { return cmp.Or(strings.Compare(a.key, b.key), cmp.Compare(a.rep, b.rep)) })
	for _, e := range extra {
		e.holding.key = c.keys.Number(e.key)
		held = append(held, e.holding)
	}
	// Group by key, replicas in history order within a key.
	slices.SortFunc(held, func(a, b holding) int { return cmp.Or(cmp.Compare(a.key, b.key), cmp.Compare(a.rep, b.rep)) })
	start := make([]int32, c.keys.Len()+1)
	for _, h := range held {
		start[h.key+1]++
	}
	for k := 1; k < len(start); k++ {
		start[k] += start[k-1]
	}
	c.ordStart = make([]int32, 1, c.keys.Len()+1)
	mark := int32(-1)
	clean := func(dst []int32, k int32, h holding) []int32 {
		mark-- // distinct from -1 (unmarked) and from node numbers
		return c.cleanOrder(dst, k, c.h.replicas[h.rep].Name, h.order, mark)
	}
	for k := range int32(c.keys.Len()) {
		hs := held[start[k]:start[k+1]]
		from := len(c.ord)
		switch len(hs) {
		case 0:
		case 1:
			c.ord = clean(c.ord, k, hs[0])
		default:
			lists := make([][]int32, len(hs))
			names := make([]string, len(hs))
			for i, h := range hs {
				lists[i] = clean(nil, k, h)
				names[i] = c.h.replicas[h.rep].Name
			}
			c.ord = append(c.ord, c.mergeOrders(k, names, lists)...)
		}
		for i, v := range c.ord[from:] {
			c.wPos[c.writeSlot(v, k)] = int32(i + 1)
		}
		c.ordStart = append(c.ordStart, int32(len(c.ord)))
	}
	for v := range c.stamp {
		c.stamp[v] = -1
	}
}

// cleanOrder appends to dst the writers in replica rep's order of key k that may be versions of
// k, reporting the others: writers not in the history, that did not write k, that aborted, or
// that are listed twice (mark tags the writers seen in this order).
func (c *tccChecker) cleanOrder(dst []int32, k int32, rep string, order []txn.ID, mark int32) []int32 {
	key := c.keys.Name(k)
	bad := func(id txn.ID, format string) {
		c.report(Anomaly{Kind: TCCVersionOrder, Txns: []txn.ID{id}, Key: key,
			Detail: fmt.Sprintf("replica %q "+format, rep, key, id)})
	}
	for _, id := range order {
		w, ok := c.node[id]
		switch {
		case !ok:
			bad(id, "installed a version of %q by %v, which is not in the history")
		case c.writeSlot(w, k) < 0:
			bad(id, "installed a version of %q by %v, which did not write it")
		case c.status[w] == txn.Aborted:
			bad(id, "installed a version of %q by %v, which aborted")
		case c.stamp[w] == mark:
			bad(id, "lists the version of %q by %v twice")
		default:
			c.stamp[w] = mark
			c.live[w] = true // an unknown outcome that was installed committed
			dst = append(dst, w)
		}
	}
	return dst
}

// mergeOrders merges several replicas' orders of key k (see buildOrders).
func (c *tccChecker) mergeOrders(k int32, names []string, lists [][]int32) []int32 {
	if !slices.ContainsFunc(lists[1:], func(l []int32) bool { return !slices.Equal(l, lists[0]) }) {
		return lists[0]
	}
	key := c.keys.Name(k)
	reported := c.reportInversion(key, names, lists)

	local := make(map[int32]int32) // node -> index in order of first appearance
	var nodes []int32
	for _, l := range lists {
		for _, v := range l {
			if _, ok := local[v]; !ok {
				local[v] = int32(len(nodes))
				nodes = append(nodes, v)
			}
		}
	}
	succ := make([][]int32, len(nodes))
	indeg := make([]int32, len(nodes))
	for _, l := range lists {
		for i := 1; i < len(l); i++ {
			a, b := local[l[i-1]], local[l[i]]
			succ[a] = append(succ[a], b)
			indeg[b]++
		}
	}
	ready := &nodeHeap{}
	for i, d := range indeg {
		if d == 0 {
			ready.items = append(ready.items, int32(i))
		}
	}
	done := make([]bool, len(nodes))
	merged := make([]int32, 0, len(nodes))
	for len(merged) < len(nodes) {
		if ready.Len() == 0 { // a contradiction: force the earliest remaining version
			i := int32(slices.Index(done, false))
			indeg[i] = 0
			heap.Push(ready, i)
			if !reported {
				reported = true
				c.report(Anomaly{Kind: TCCDiverged, Key: key, Txns: []txn.ID{c.ids[nodes[i]]},
					Detail: fmt.Sprintf("replicas %s order the versions of %q in a cycle; they cannot be merged", strings.Join(names, ", "), key)})
			}
		}
		i := heap.Pop(ready).(int32)
		done[i] = true
		merged = append(merged, nodes[i])
		for _, j := range succ[i] {
			if indeg[j]--; indeg[j] == 0 {
				heap.Push(ready, j)
			}
		}
	}
	return merged
}

// reportInversion reports the first pair of versions of key that two replicas order oppositely,
// if there is one.
func (c *tccChecker) reportInversion(key string, names []string, lists [][]int32) bool {
	for i := range lists {
		at := make(map[int32]int, len(lists[i]))
		for p, v := range lists[i] {
			at[v] = p
		}
		for j := i + 1; j < len(lists); j++ {
			prev := int32(-1) // the last version of lists[j] that lists[i] also holds
			for _, v := range lists[j] {
				p, ok := at[v]
				if !ok {
					continue
				}
				if prev >= 0 && at[prev] > p {
					a, b := c.ids[prev], c.ids[v]
					c.report(Anomaly{Kind: TCCDiverged, Key: key, Txns: []txn.ID{a, b},
						Detail: fmt.Sprintf("replicas %q and %q order the versions of %q differently: %q has %v before %v, %q the reverse",
							names[i], names[j], key, names[j], a, b, names[i])})
					return true
				}
				prev = v
			}
		}
	}
	return false
}

// findWriteCycles reports, in Info, one cycle of write dependencies (consecutive versions of a
// key) through each group of WOTs whose versions no single order can explain: Adya's G0.
func (c *tccChecker) findWriteCycles() {
	n := len(c.ids)
	g := &graph{start: make([]int32, n+1)}
	for k := range c.keys.Len() {
		for i := c.ordStart[k] + 1; i < c.ordStart[k+1]; i++ {
			g.start[c.ord[i-1]+1]++
		}
	}
	for v := 1; v <= n; v++ {
		g.start[v] += g.start[v-1]
	}
	g.edges = make([]edge, g.start[n])
	fill := slices.Clone(g.start[:n])
	for k := range c.keys.Len() {
		for i := c.ordStart[k] + 1; i < c.ordStart[k+1]; i++ {
			from := c.ord[i-1]
			g.edges[fill[from]] = edge{to: c.ord[i], key: int32(k), kind: ww}
			fill[from]++
		}
	}
	comp, size := g.scc(ww, nil, nil)
	done := make([]bool, len(size))
	search := newBFS(n)
	for v := range n {
		cid := comp[v]
		if cid < 0 || size[cid] < 2 || done[cid] {
			continue
		}
		done[cid] = true
		nodes, edges := search.cycle(g, &cycleSearch{start: int32(v), mask: ww, comp: comp, cid: cid})
		var b strings.Builder
		txns := make([]txn.ID, len(nodes))
		for i, u := range nodes {
			txns[i] = c.ids[u]
			fmt.Fprintf(&b, "%v -ww(%s)-> ", c.ids[u], c.keys.Name(edges[i].key))
		}
		b.WriteString(c.ids[nodes[0]].String())
		c.info = append(c.info, Anomaly{Kind: TCCWriteCycle, Txns: txns,
			Detail: "concurrent WOTs are ordered differently on different keys (allowed by TCC): " + b.String()})
	}
}

// keyIndex answers the C2/C3 query "the latest write to key k after position p in Past(v)",
// over the writes processed so far (see checkCausal).
type keyIndex struct {
	c *tccChecker
	// Bit q of done[wordStart[k]:wordStart[k+1]] is set once the version at position q of key k
	// has been processed; top[k] is the highest such position.
	wordStart []int32
	done      []uint64
	top       []int32
	runs      []*sessionRuns // per key, built when a scan runs too long
}

// sessionRuns groups one key's writes by session: run i holds the writes of session sess[i],
// entries start[i]:start[i+1], by rank; pmax is the highest position among the run's entries up
// to and including this one.
type sessionRuns struct {
	sess  []int32
	start []int32
	rank  []uint32
	pmax  []int32
}

// scanMin is how many steps a scan takes before it considers the per-session index.
const scanMin = 64

func newKeyIndex(c *tccChecker) *keyIndex {
	x := &keyIndex{c: c, wordStart: make([]int32, c.keys.Len()+1), top: make([]int32, c.keys.Len()), runs: make([]*sessionRuns, c.keys.Len())}
	for k := range c.keys.Len() {
		versions := c.ordStart[k+1] - c.ordStart[k]
		x.wordStart[k+1] = x.wordStart[k] + versions/64 + 1 // positions 1..versions
	}
	x.done = make([]uint64, x.wordStart[c.keys.Len()])
	return x
}

// markDone records that the version at position pos of key k has been processed.
func (x *keyIndex) markDone(k, pos int32) {
	x.done[x.wordStart[k]+pos/64] |= 1 << (pos % 64)
	x.top[k] = max(x.top[k], pos)
}

// latestAfter returns the writer of the latest version of key k after position pos that is in
// Past(v) ∪ {v} (v's own entry taken as own), or -1 if there is none.
func (x *keyIndex) latestAfter(p *causalState, v int32, own uint32, k, pos int32) int32 {
	c := x.c
	limit := scanMin
	if r := x.runs[k]; r != nil {
		limit = max(scanMin, 2*len(r.sess))
	}
	for q, steps := x.top[k], 0; q > pos; steps++ {
		if steps >= limit {
			if x.runs[k] == nil {
				x.runs[k] = x.buildRuns(k)
				limit = max(scanMin, 2*len(x.runs[k].sess))
			}
			if steps >= limit {
				return x.fromRuns(p, v, own, k, pos)
			}
		}
		i := q / 64
		word := x.done[x.wordStart[k]+i]
		if b := q % 64; b < 63 {
			word &= 1<<(b+1) - 1
		}
		if word == 0 {
			q = i*64 - 1
			continue
		}
		q = i*64 + 63 - int32(bits.LeadingZeros64(word))
		if q <= pos {
			break
		}
		w := c.ord[c.ordStart[k]+q-1]
		if p.entry(v, own, c.sess[w]) >= c.rank[w] {
			return w
		}
		q--
	}
	return -1
}

// buildRuns builds key k's per-session index.
func (x *keyIndex) buildRuns(k int32) *sessionRuns {
	c := x.c
	type entry struct {
		sess int32
		rank uint32
		pos  int32
	}
	order := c.ord[c.ordStart[k]:c.ordStart[k+1]]
	es := make([]entry, len(order))
	for i, w := range order {
		es[i] = entry{c.sess[w], c.rank[w], int32(i + 1)}
	}
	slices.SortFunc(es, func(a, b entry) int {
		if a.sess != b.sess {
			return int(a.sess - b.sess)
		}
		return int(int64(a.rank) - int64(b.rank))
	})
	r := &sessionRuns{rank: make([]uint32, len(es)), pmax: make([]int32, len(es))}
	for i, e := range es {
		if i == 0 || e.sess != es[i-1].sess {
			r.sess = append(r.sess, e.sess)
			r.start = append(r.start, int32(i))
			r.pmax[i] = e.pos
		} else {
			r.pmax[i] = max(r.pmax[i-1], e.pos)
		}
		r.rank[i] = e.rank
	}
	r.start = append(r.start, int32(len(es)))
	return r
}

// fromRuns answers latestAfter with one binary search per session that wrote k.
func (x *keyIndex) fromRuns(p *causalState, v int32, own uint32, k, pos int32) int32 {
	r := x.runs[k]
	best := int32(0)
	for i, s := range r.sess {
		seen := p.entry(v, own, s)
		if seen == 0 {
			continue
		}
		lo, hi := r.start[i], r.start[i+1]
		j, _ := slices.BinarySearch(r.rank[lo:hi], seen+1) // first entry beyond Past(v)
		if j > 0 {
			best = max(best, r.pmax[lo+int32(j)-1])
		}
	}
	if best <= pos {
		return -1
	}
	return x.c.ord[x.c.ordStart[k]+best-1]
}
