package checker

import (
	"fmt"
	"slices"
	"strings"

	"github.com/meridian-kv/meridian/protocol/txn"
	"github.com/meridian-kv/meridian/verify/history"
)

// edgeKind is a dependency type; kinds are bits so that a set of kinds is a mask.
type edgeKind uint8

const (
	ww edgeKind = 1 << iota
	wr
	rw
	anyEdge = ww | wr | rw
)

func (k edgeKind) String() string {
	switch k {
	case ww:
		return "ww"
	case wr:
		return "wr"
	}
	return "rw"
}

// edge is one dependency out of a node: 12 bytes, no pointers, so the graph is a few flat arrays.
type edge struct {
	to, key int32
	kind    edgeKind
}

// graph is the direct serialization graph in compressed sparse row form: node v's edges are
// edges[start[v]:start[v+1]].
type graph struct {
	start []int32
	edges []edge
}

// buildGraph derives the dependency edges between committed transactions from the reads and the
// version order of the first replica, reporting reads of versions that are aborted (G1a) or
// unknown. Aborted writers are left out of the version order: the graph is over committed
// transactions only, and installed aborted writes are reported by checkInstalled.
func (c *checker) buildGraph(in *installed) *graph {
	// proj[projStart[k]:projStart[k+1]] is key k's version order restricted to committed
	// writers; projOf maps a position in in.writers to its position in proj, or -1.
	projStart := make([]int32, 1, c.keys.Len()+1)
	proj := make([]int32, 0, len(in.writers))
	projOf := make([]int32, len(in.writers))
	for k := range c.keys.Len() {
		for pos := in.start[k]; pos < in.start[k+1]; pos++ {
			projOf[pos] = -1
			if v := in.writers[pos]; v >= 0 && c.committed[v] {
				projOf[pos] = int32(len(proj))
				proj = append(proj, v)
			}
		}
		projStart = append(projStart, int32(len(proj)))
	}

	type rawEdge struct {
		from int32
		edge
	}
	raw := make([]rawEdge, 0, len(proj)+2*c.committedReads) // ww, plus at most a wr and an rw per read
	add := func(from, to, key int32, kind edgeKind) {
		if from != to {
			raw = append(raw, rawEdge{from, edge{to, key, kind}})
		}
	}
	for k := range c.keys.Len() {
		for i := projStart[k] + 1; i < projStart[k+1]; i++ {
			add(proj[i-1], proj[i], int32(k), ww)
		}
	}
	var buf history.Txn
	for v, id := range c.ids {
		if !c.committed[v] {
			continue // an aborted transaction's reads order nothing
		}
		reader := int32(v)
		for _, r := range c.h.txns.TxnReusing(int(c.txnIdx[v]), &buf).Reads {
			k, keyKnown := c.keys.Find(r.Key)
			next := int32(-1) // position in proj of the version after the one read
			if r.Version == txn.None {
				if keyKnown {
					next = projStart[k]
				}
			} else {
				w, ok := c.node[r.Version]
				switch {
				case !ok:
					c.report(KindUnknownVersion, fmt.Sprintf("%v read %q from %v, which is not in the history", id, r.Key, r.Version), id, r.Version)
					continue
				case !c.committed[w]:
					c.report(KindG1a, fmt.Sprintf("%v read %q from aborted %v", id, r.Key, r.Version), id, r.Version)
					continue
				}
				pos := int32(-1)
				if keyKnown {
					pos = in.slotOf(w, k)
				}
				if pos < 0 {
					c.report(KindUnknownVersion, fmt.Sprintf("%v read %q from %v, which replica %q never installed", id, r.Key, r.Version, in.rep.Name), id, r.Version)
					continue
				}
				add(w, reader, k, wr)
				next = projOf[pos] + 1
			}
			if next >= 0 && next < projStart[k+1] {
				add(reader, proj[next], k, rw)
			}
		}
	}

	g := &graph{start: make([]int32, len(c.ids)+1), edges: make([]edge, len(raw))}
	for _, e := range raw {
		g.start[e.from+1]++
	}
	for v := 1; v < len(g.start); v++ {
		g.start[v] += g.start[v-1]
	}
	fill := make([]int32, len(c.ids))
	copy(fill, g.start)
	for _, e := range raw {
		g.edges[fill[e.from]] = e.edge
		fill[e.from]++
	}
	return g
}

// scc computes the strongly connected components of the subgraph whose edges have a kind in mask
// and, if within is non-nil, join two nodes with the same within label. It explores from roots
// (every node if roots is nil); comp[v] is v's component, or -1 for nodes never reached, and
// size[c] the size of component c. It is Tarjan's algorithm with an explicit stack.
func (g *graph) scc(mask edgeKind, within, roots []int32) (comp, size []int32) {
	n := len(g.start) - 1
	index := make([]int32, n) // 1 + DFS discovery order; 0 = not yet visited
	low := make([]int32, n)
	comp = make([]int32, n)
	for v := range comp {
		comp[v] = -1 // visited with comp -1 means still on the Tarjan stack
	}
	type frame struct{ v, next int32 }
	var calls []frame
	var stack []int32
	var counter int32
	visit := func(v int32) {
		counter++
		index[v], low[v] = counter, counter
		stack = append(stack, v)
		calls = append(calls, frame{v, g.start[v]})
	}
	explore := func(root int32) {
		if index[root] != 0 {
			return
		}
		visit(root)
		for len(calls) > 0 {
			f := &calls[len(calls)-1]
			v := f.v
			descended := false
			for f.next < g.start[v+1] {
				e := g.edges[f.next]
				f.next++
				if e.kind&mask == 0 || (within != nil && within[e.to] != within[v]) {
					continue
				}
				if index[e.to] == 0 {
					visit(e.to) // invalidates f
					descended = true
					break
				}
				if comp[e.to] < 0 {
					low[v] = min(low[v], index[e.to])
				}
			}
			if descended {
				continue
			}
			calls = calls[:len(calls)-1]
			if len(calls) > 0 {
				parent := calls[len(calls)-1].v
				low[parent] = min(low[parent], low[v])
			}
			if low[v] == index[v] {
				id := int32(len(size))
				var members int32
				for {
					w := stack[len(stack)-1]
					stack = stack[:len(stack)-1]
					comp[w] = id
					members++
					if w == v {
						break
					}
				}
				size = append(size, members)
			}
		}
	}
	if roots == nil {
		for v := range n {
			explore(int32(v))
		}
	} else {
		for _, v := range roots {
			explore(v)
		}
	}
	return comp, size
}

// cycleSearch says where to look for a witness cycle: from start, along edges in mask that stay
// in component cid of comp.
type cycleSearch struct {
	kind  string
	start int32
	mask  edgeKind
	comp  []int32
	cid   int32
}

// findCycles reports one cycle per non-trivial strongly connected component of the graph, of the
// strongest kind the component contains: G0 if it holds a cycle of ww edges, else G1c if it holds
// one of ww and wr edges, else G2.
func (c *checker) findCycles(g *graph) {
	full, fullSize := g.scc(anyEdge, nil, nil)
	var roots []int32 // nodes on some cycle, in history order
	for v, cid := range full {
		if fullSize[cid] > 1 {
			roots = append(roots, int32(v))
		}
	}
	if len(roots) == 0 {
		return
	}
	search := make([]cycleSearch, len(fullSize))
	for _, level := range []struct {
		kind string
		mask edgeKind
	}{{KindG0, ww}, {KindG1c, ww | wr}} {
		sub, subSize := g.scc(level.mask, full, roots)
		for _, v := range roots {
			if s := sub[v]; s >= 0 && subSize[s] > 1 && search[full[v]].kind == "" {
				search[full[v]] = cycleSearch{level.kind, v, level.mask, sub, s}
			}
		}
	}
	reported := make([]bool, len(fullSize))
	bfs := newBFS(len(c.ids))
	for _, v := range roots {
		if reported[full[v]] {
			continue
		}
		reported[full[v]] = true
		s := &search[full[v]]
		if s.kind == "" {
			*s = cycleSearch{KindG2, v, anyEdge, full, full[v]}
		}
		nodes, edges := bfs.cycle(g, s)
		var b strings.Builder
		txns := make([]txn.ID, len(nodes))
		for i, u := range nodes {
			txns[i] = c.ids[u]
			b.WriteString(c.ids[u].String())
			e := edges[i]
			fmt.Fprintf(&b, " -%v(%s)-> ", e.kind, c.keys.Name(e.key))
		}
		b.WriteString(c.ids[nodes[0]].String())
		c.report(s.kind, b.String(), txns...)
	}
}

// bfs finds short cycles; its arrays are allocated once and reset after each search.
type bfs struct {
	parent []int32 // node -> predecessor on the search tree, -1 if unvisited
	via    []edge  // node -> the edge that reached it
	queue  []int32
}

func newBFS(n int) *bfs {
	b := &bfs{parent: make([]int32, n), via: make([]edge, n)}
	for v := range b.parent {
		b.parent[v] = -1
	}
	return b
}

// cycle returns a shortest cycle through s.start within the search's edges, as its nodes from
// s.start and, for each, the edge leaving it. Such a cycle exists because s.start lies in a
// non-trivial component of that subgraph.
func (b *bfs) cycle(g *graph, s *cycleSearch) ([]int32, []edge) {
	defer func() {
		for _, v := range b.queue {
			b.parent[v] = -1
		}
		b.queue = b.queue[:0]
	}()
	b.queue = append(b.queue, s.start)
	b.parent[s.start] = s.start
	for head := 0; head < len(b.queue); head++ {
		v := b.queue[head]
		for _, e := range g.edges[g.start[v]:g.start[v+1]] {
			if e.kind&s.mask == 0 || s.comp[e.to] != s.cid {
				continue
			}
			if e.to == s.start {
				var nodes []int32
				edges := []edge{e}
				for u := v; u != s.start; u = b.parent[u] {
					nodes = append(nodes, u)
					edges = append(edges, b.via[u])
				}
				nodes = append(nodes, s.start)
				slices.Reverse(nodes)
				slices.Reverse(edges)
				return nodes, edges
			}
			if b.parent[e.to] < 0 {
				b.parent[e.to], b.via[e.to] = v, e
				b.queue = append(b.queue, e.to)
			}
		}
	}
	panic(fmt.Sprintf("checker: no cycle through node %d inside its component", s.start))
}
