package checker

// clockFan is the fan-out of the vector-clock trie: a leaf holds clockFan entries.
const clockFan = 32

// clockNode is one node of a persistent vector clock: a trie of fixed depth over session
// numbers whose leaves hold, per session, the rank (1-based position in the session) of the
// latest transaction of that session in a causal past; a nil node stands for all zeros.
//
// Clocks share structure: a join returns one of its arguments (or its subtree) unchanged
// wherever that argument dominates, so the clocks of transactions with a common past share the
// nodes of that past and a join costs time in proportion to the subtrees where the arguments
// differ. Nodes are immutable except while the computation that allocated them (its edit
// number) is still running: one transaction's clock is built by several joins and raises, and
// the nodes it copied are updated in place instead of being copied again.
type clockNode struct {
	edit uint32
	kids []*clockNode // interior node: clockFan children
	seqs []uint32     // leaf: clockFan entries
}

// clockShape is the depth of the clock tries for a given number of sessions.
type clockShape struct {
	levels int // 1 means the root is a leaf
}

func newClockShape(sessions int) clockShape {
	s := clockShape{levels: 1}
	for capacity := clockFan; capacity < sessions; capacity *= clockFan {
		s.levels++
	}
	return s
}

func newClockLeaf(edit uint32) *clockNode {
	n := &struct {
		node clockNode
		seqs [clockFan]uint32
	}{}
	n.node.edit, n.node.seqs = edit, n.seqs[:]
	return &n.node
}

func newClockInterior(edit uint32) *clockNode {
	n := &struct {
		node clockNode
		kids [clockFan]*clockNode
	}{}
	n.node.edit, n.node.kids = edit, n.kids[:]
	return &n.node
}

// own returns n if the running computation edit may update it in place, else a copy of it.
func (n *clockNode) own(edit uint32) *clockNode {
	if n.edit == edit {
		return n
	}
	var c *clockNode
	if n.seqs != nil {
		c = newClockLeaf(edit)
		copy(c.seqs, n.seqs)
	} else {
		c = newClockInterior(edit)
		copy(c.kids, n.kids)
	}
	return c
}

// digit returns the child index of session s at level (0 = leaves).
func digit(s int32, level int) int {
	for range level {
		s /= clockFan
	}
	return int(s % clockFan)
}

// get returns the entry of session s.
func (sh clockShape) get(n *clockNode, s int32) uint32 {
	for level := sh.levels - 1; n != nil; level-- {
		if level == 0 {
			return n.seqs[digit(s, 0)]
		}
		n = n.kids[digit(s, level)]
	}
	return 0
}

// raise returns n with session s's entry raised to at least rank.
func (sh clockShape) raise(n *clockNode, s int32, rank uint32, edit uint32) *clockNode {
	if sh.get(n, s) >= rank {
		return n
	}
	return raiseAt(n, s, rank, edit, sh.levels-1)
}

func raiseAt(n *clockNode, s int32, rank uint32, edit uint32, level int) *clockNode {
	if level == 0 {
		if n == nil {
			n = newClockLeaf(edit)
		} else {
			n = n.own(edit)
		}
		n.seqs[digit(s, 0)] = rank
		return n
	}
	if n == nil {
		n = newClockInterior(edit)
	} else {
		n = n.own(edit)
	}
	d := digit(s, level)
	n.kids[d] = raiseAt(n.kids[d], s, rank, edit, level-1)
	return n
}

// join returns the entry-wise maximum of a and b, reusing a or b (or their subtrees) where one
// dominates, and updating a's nodes in place where the computation edit owns them.
func (sh clockShape) join(a, b *clockNode, edit uint32) *clockNode {
	return joinAt(a, b, edit, sh.levels-1)
}

func joinAt(a, b *clockNode, edit uint32, level int) *clockNode {
	switch {
	case b == nil || a == b:
		return a
	case a == nil:
		return b
	}
	if level == 0 {
		as, bs := (*[clockFan]uint32)(a.seqs), (*[clockFan]uint32)(b.seqs)
		aBehind, bBehind := false, false
		for i := range clockFan {
			aBehind = aBehind || as[i] < bs[i]
			bBehind = bBehind || bs[i] < as[i]
		}
		switch {
		case !aBehind:
			return a
		case !bBehind:
			return b
		}
		a = a.own(edit)
		for i, y := range b.seqs {
			a.seqs[i] = max(a.seqs[i], y)
		}
		return a
	}
	var kids [clockFan]*clockNode
	aWins, bWins := true, true
	for i := range kids {
		kids[i] = joinAt(a.kids[i], b.kids[i], edit, level-1)
		aWins = aWins && kids[i] == a.kids[i]
		bWins = bWins && kids[i] == b.kids[i]
	}
	switch {
	case aWins:
		return a
	case bWins:
		return b
	}
	a = a.own(edit)
	copy(a.kids, kids[:])
	return a
}
