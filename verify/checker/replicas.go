package checker

import (
	"fmt"
	"slices"

	"github.com/meridian-kv/meridian/protocol/txn"
	"github.com/meridian-kv/meridian/verify/history"
)

// installed indexes one replica's version orders. A key the replica does not mention holds only
// its initial version there.
type installed struct {
	rep *history.Replica
	// Key k's versions are writers[start[k]:start[k+1]]: the writer's node, or -1 if the writer
	// is not in the history.
	start   []int32
	writers []int32
	// Node v installed the versions at[atStart[v]:atStart[v+1]], sorted by key.
	atStart []int32
	at      []slot
}

// slot is one installed version: its key and its position in installed.writers.
type slot struct{ key, pos int32 }

// install indexes rep, reporting versions whose writer is not in the history and, if base is not
// nil, every key whose version order differs from base's (INV-2). Keys whose order equals base's
// reuse its node numbers instead of looking each writer up again.
func (c *checker) install(rep *history.Replica, base *installed) *installed {
	in := &installed{rep: rep, start: make([]int32, 1, c.keys.Len()+1)}
	if base != nil {
		in.writers = make([]int32, 0, len(base.writers))
	}
	for k := range c.keys.Len() {
		key := c.keys.Name(int32(k))
		order := rep.VersionOrder[key]
		var known []int32 // the nodes of order, if base already looked them up
		if base != nil {
			if baseOrder := base.rep.VersionOrder[key]; slices.Equal(order, baseOrder) {
				known = base.writers[base.start[k]:base.start[k+1]]
			} else {
				c.reportDivergence(key, base.rep.Name, baseOrder, rep.Name, order)
			}
		}
		for i, id := range order {
			var v int32
			if known != nil {
				v = known[i]
			} else if n, ok := c.node[id]; ok {
				v = n
			} else {
				v = -1
			}
			if v < 0 {
				c.report(KindUnknownVersion, fmt.Sprintf("replica %q installed a version of %q by %v, which is not in the history",
					rep.Name, key, id), id)
			}
			in.writers = append(in.writers, v)
		}
		in.start = append(in.start, int32(len(in.writers)))
	}
	// Counting sort by node. Scanning keys in order leaves each node's slots sorted by key.
	count := make([]int32, len(c.ids)+1)
	for _, v := range in.writers {
		if v >= 0 {
			count[v+1]++
		}
	}
	for v := 1; v < len(count); v++ {
		count[v] += count[v-1]
	}
	in.atStart = slices.Clone(count)
	in.at = make([]slot, count[len(count)-1])
	for k := range c.keys.Len() {
		for pos := in.start[k]; pos < in.start[k+1]; pos++ {
			if v := in.writers[pos]; v >= 0 {
				in.at[count[v]] = slot{key: int32(k), pos: pos}
				count[v]++
			}
		}
	}
	return in
}

// slotOf returns where node v's version of key k is installed, or -1.
func (in *installed) slotOf(v, k int32) int32 {
	at := in.at[in.atStart[v]:in.atStart[v+1]]
	i, found := slices.BinarySearchFunc(at, k, func(s slot, k int32) int { return int(s.key - k) })
	if !found {
		return -1
	}
	return at[i].pos
}

// reportDivergence reports the first position where two replicas' orders for key differ.
func (c *checker) reportDivergence(key, nameA string, a []txn.ID, nameB string, b []txn.ID) {
	i := 0
	for i < len(a) && i < len(b) && a[i] == b[i] {
		i++
	}
	var txns []txn.ID
	at := func(order []txn.ID) string {
		if i == len(order) {
			return "no version"
		}
		txns = append(txns, order[i])
		return order[i].String()
	}
	detail := fmt.Sprintf("key %q: at position %d replica %q has %s, replica %q has %s", key, i, nameA, at(a), nameB, at(b))
	c.report(KindDiverged, detail, txns...)
}

// checkInstalled compares what one replica installed with what the transactions declared: no
// aborted write installed (INV-11), no committed write missing, no version installed twice or by
// a transaction that did not write the key.
func (c *checker) checkInstalled(in *installed) {
	name := in.rep.Name
	for v, id := range c.ids {
		declared := c.writeKeys[c.writeStart[v]:c.writeStart[v+1]]
		got := in.at[in.atStart[v]:in.atStart[v+1]]
		for i, j := 0, 0; i < len(declared) || j < len(got); {
			switch {
			case j > 0 && j < len(got) && got[j].key == got[j-1].key:
				c.report(KindMalformed, fmt.Sprintf("replica %q installed %v's version of %q twice", name, id, c.keys.Name(got[j].key)), id)
				j++
			case j < len(got) && (i == len(declared) || got[j].key < declared[i]):
				c.report(KindUnknownVersion, fmt.Sprintf("replica %q installed a version of %q by %v, which did not write it", name, c.keys.Name(got[j].key), id), id)
				j++
			case j == len(got) || declared[i] < got[j].key:
				if c.committed[v] {
					c.report(KindLostCommit, fmt.Sprintf("replica %q never installed committed %v's write of %q", name, id, c.keys.Name(declared[i])), id)
				}
				i++
			default: // the declared write is installed
				if !c.committed[v] {
					c.report(KindAbortedInstalled, fmt.Sprintf("replica %q installed aborted %v's write of %q", name, id, c.keys.Name(declared[i])), id)
				}
				i++
				j++
			}
		}
	}
}
