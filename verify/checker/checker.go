// Package checker decides whether a recorded run kept Meridian's safety promises (spec §7.1):
// INV-1, one-copy serializability of the committed transactions; INV-2, every replica installed
// every key's versions in the same order; and INV-11, no aborted transaction's write was ever
// installed.
//
// Serializability is checked the way Adya defines it (A. Adya, "Weak Consistency: A Generalized
// Theory and Optimistic Implementations for Distributed Transactions", PhD thesis, MIT, 1999):
// build the direct serialization graph over the committed transactions and look for cycles. Its
// nodes are transactions and its edges are dependencies on a key:
//
//   - ww (write dependency): Ti installed a version and Tj installed the next one;
//   - wr (read dependency): Tj read the version Ti installed;
//   - rw (anti-dependency): Ti read a version and Tj installed the next one.
//
// The history is serializable exactly when the graph is acyclic. A cycle is reported as the
// strongest of Adya's phenomena it exhibits: G0 (write cycle, ww edges only), G1c (circular
// information flow, ww and wr edges) or G2 (the cycle needs an anti-dependency). G1a (aborted
// read) is a committed transaction reading a version an aborted transaction wrote. Adya's G1b
// (intermediate read) cannot occur here: a transaction writes each key at most once, so every
// version it installs is its final one and there is no intermediate version to read.
//
// The version order comes from the history's first replica; the replica checks then make sure
// every replica agrees with it. Checking uses the recorded versions only, never values, so it
// needs no model of the store. It runs in time roughly linear in the size of the history: the
// graph is a few flat int32 arrays and the cycle search is Tarjan's strongly connected components
// algorithm with an explicit stack, so histories of millions of transactions need no deep stack.
package checker

import (
	"fmt"
	"slices"
	"strings"

	"github.com/meridian-kv/meridian/protocol/txn"
	"github.com/meridian-kv/meridian/verify/history"
)

// Anomaly kinds, in the order Summary lists them.
const (
	// KindG0 is a cycle of write dependencies (ww edges only).
	KindG0 = "G0"
	// KindG1a is a committed transaction that read a version written by an aborted one.
	KindG1a = "G1a"
	// KindG1c is a cycle of write and read dependencies (ww and wr edges).
	KindG1c = "G1c"
	// KindG2 is a cycle that needs at least one anti-dependency (rw edge).
	KindG2 = "G2"
	// KindUnknownVersion is a version, read by a committed transaction or installed by a replica,
	// that no transaction in the history wrote, or that the first replica never installed.
	KindUnknownVersion = "unknown-version"
	// KindDiverged is a key whose version order differs between two replicas (INV-2).
	KindDiverged = "diverged"
	// KindAbortedInstalled is an aborted transaction's write installed by a replica (INV-11).
	KindAbortedInstalled = "aborted-installed"
	// KindLostCommit is a committed transaction's write missing from a replica.
	KindLostCommit = "lost-commit"
	// KindMalformed is a history the checker cannot interpret as recorded: a transaction with id
	// txn.None, an invalid status or a duplicate id (it is then ignored), a version installed
	// twice in one key's order, or no replica at all (so no version order to check against).
	KindMalformed = "malformed"
)

var kinds = []string{KindG0, KindG1a, KindG1c, KindG2, KindUnknownVersion, KindDiverged,
	KindAbortedInstalled, KindLostCommit, KindMalformed}

// Anomaly is one violation found in a history.
type Anomaly struct {
	// Kind is one of the Kind constants: "G0", "G1a", "G1c", "G2", "unknown-version",
	// "diverged", "aborted-installed", "lost-commit" or "malformed".
	Kind string
	// Txns are the transactions involved. For a cycle (G0, G1c, G2) they are the transactions on
	// the cycle, in cycle order; for G1a and unknown-version reads, the reader and then the
	// writer; for diverged, the two replicas' writers at the first differing position (those that
	// exist); otherwise the one transaction concerned.
	Txns []txn.ID
	// Detail says what happened. For a cycle it is the cycle with its edges, e.g.
	// "t3.1 -rw(k5)-> t4.2 -wr(k7)-> t3.1".
	Detail string
}

// String renders the anomaly as "<kind>: <detail>".
func (a Anomaly) String() string { return a.Kind + ": " + a.Detail }

// Report is the outcome of Check.
type Report struct {
	// OK is true if and only if there are no anomalies.
	OK bool
	// Anomalies lists the violations grouped by kind, in the order of the Kind constants (so the
	// most serious come first), and within a kind in a deterministic order. Each group of
	// transactions that cannot be serialized (a strongly connected component of the serialization
	// graph) yields one cycle.
	Anomalies []Anomaly
	// Committed and Aborted count the checked transactions by status (malformed ones, which are
	// ignored, count in neither).
	Committed, Aborted int
}

// Summary renders the report on one line: "ok: 1234 committed, 56 aborted", or
// "FAILED: 3 anomalies (2 G2, 1 diverged); first: G2: ...".
func (r Report) Summary() string {
	if r.OK {
		return fmt.Sprintf("ok: %d committed, %d aborted", r.Committed, r.Aborted)
	}
	counts := make(map[string]int)
	for _, a := range r.Anomalies {
		counts[a.Kind]++
	}
	var parts []string
	for _, k := range kinds {
		if counts[k] > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", counts[k], k))
		}
	}
	noun := "anomalies"
	if len(r.Anomalies) == 1 {
		noun = "anomaly"
	}
	return fmt.Sprintf("FAILED: %d %s (%s); first: %v", len(r.Anomalies), noun, strings.Join(parts, ", "), r.Anomalies[0])
}

// Check checks h against INV-1, INV-2 and INV-11 (see the package documentation). It does not
// modify h. A transaction of unknown outcome (its client lost the answer) counts as committed if
// the first replica installed one of its writes, and as aborted otherwise; the replica checks
// then hold it to that.
func Check(h *history.History) Report {
	h = resolveUnknown(h)
	c := newChecker(h)
	if len(h.Replicas) == 0 {
		if len(h.Txns) > 0 {
			c.report(KindMalformed, "the history has no replica, so there is no version order to check against")
		}
	} else {
		first := c.install(&h.Replicas[0], nil)
		c.findCycles(c.buildGraph(first))
		c.checkInstalled(first)
		for i := 1; i < len(h.Replicas); i++ {
			c.checkInstalled(c.install(&h.Replicas[i], first))
		}
	}
	slices.SortStableFunc(c.anomalies, func(a, b Anomaly) int {
		return slices.Index(kinds, a.Kind) - slices.Index(kinds, b.Kind)
	})
	r := Report{Anomalies: c.anomalies, OK: len(c.anomalies) == 0}
	for _, committed := range c.committed {
		if committed {
			r.Committed++
		} else {
			r.Aborted++
		}
	}
	return r
}

// checker holds the history in compact form: transactions are nodes numbered 0..n-1 in history
// order and keys are numbered too, so that the graph and the indexes are flat int32 arrays.
type checker struct {
	h         *history.History
	anomalies []Anomaly

	ids       []txn.ID         // node -> transaction id
	committed []bool           // node -> committed (otherwise aborted)
	txnIdx    []int32          // node -> index in h.Txns
	node      map[txn.ID]int32 // transaction id -> node

	keys   []string         // key number -> key
	keyNum map[string]int32 // key -> key number

	// Declared writes: node v wrote key numbers writeKeys[writeStart[v]:writeStart[v+1]], sorted.
	writeStart []int32
	writeKeys  []int32
}

func (c *checker) report(kind, detail string, txns ...txn.ID) {
	c.anomalies = append(c.anomalies, Anomaly{Kind: kind, Txns: txns, Detail: detail})
}

// newChecker numbers the transactions and keys. Keys are numbered in order of first appearance
// among the writes, then the keys only replicas mention, sorted, so that every run over the same
// history reports the same cycles.
func newChecker(h *history.History) *checker {
	n := len(h.Txns)
	c := &checker{
		h:          h,
		node:       make(map[txn.ID]int32, n),
		keyNum:     make(map[string]int32),
		writeStart: make([]int32, 1, n+1),
	}
	for i := range h.Txns {
		t := &h.Txns[i]
		switch {
		case t.ID == txn.None:
			c.report(KindMalformed, fmt.Sprintf("transaction %d of the history has id txn.None; ignored", i))
			continue
		case t.Status != txn.Committed && t.Status != txn.Aborted:
			c.report(KindMalformed, fmt.Sprintf("%v has invalid status %d; ignored", t.ID, t.Status), t.ID)
			continue
		}
		if _, dup := c.node[t.ID]; dup {
			c.report(KindMalformed, fmt.Sprintf("%v occurs twice in the history; the second is ignored", t.ID), t.ID)
			continue
		}
		c.node[t.ID] = int32(len(c.ids))
		c.ids = append(c.ids, t.ID)
		c.committed = append(c.committed, t.Status == txn.Committed)
		c.txnIdx = append(c.txnIdx, int32(i))
		from := len(c.writeKeys)
		for _, key := range t.Writes {
			c.writeKeys = append(c.writeKeys, c.intern(key))
		}
		w := c.writeKeys[from:]
		slices.Sort(w)
		c.writeKeys = c.writeKeys[:from+len(slices.Compact(w))]
		c.writeStart = append(c.writeStart, int32(len(c.writeKeys)))
	}
	var extra []string
	for _, rep := range h.Replicas {
		for key := range rep.VersionOrder {
			if _, ok := c.keyNum[key]; !ok {
				extra = append(extra, key)
			}
		}
	}
	slices.Sort(extra)
	for _, key := range slices.Compact(extra) {
		c.intern(key)
	}
	return c
}

func (c *checker) intern(key string) int32 {
	k, ok := c.keyNum[key]
	if !ok {
		k = int32(len(c.keys))
		c.keyNum[key] = k
		c.keys = append(c.keys, key)
	}
	return k
}

// resolveUnknown returns h with every transaction of unknown outcome decided by the first
// replica's version order, copying the transactions only if there is one to decide.
func resolveUnknown(h *history.History) *history.History {
	if !slices.ContainsFunc(h.Txns, func(t history.Txn) bool { return t.Status == txn.Unknown }) {
		return h
	}
	var installed func(id txn.ID, keys []string) bool
	if len(h.Replicas) > 0 {
		order := h.Replicas[0].VersionOrder
		installed = func(id txn.ID, keys []string) bool {
			for _, k := range keys {
				if slices.Contains(order[k], id) {
					return true
				}
			}
			return false
		}
	}
	resolved := *h
	resolved.Txns = slices.Clone(h.Txns)
	for i := range resolved.Txns {
		t := &resolved.Txns[i]
		if t.Status != txn.Unknown {
			continue
		}
		if installed != nil && installed(t.ID, t.Writes) {
			t.Status = txn.Committed
		} else {
			t.Status, t.Reason = txn.Aborted, "unknown-outcome"
		}
	}
	return &resolved
}
