// Package checker decides whether a recorded run kept the consistency its protocol promises.
// Check is its one entry point and Report its one outcome; Options.Model says which promise the
// history is held to:
//
//   - Serializable (the default): Meridian's safety promises (spec §7.1): INV-1, one-copy
//     serializability of the committed transactions; INV-2, every replica installed every
//     key's versions in the same order; and INV-11, no aborted transaction's write was ever
//     installed.
//   - Causal: transactional causal consistency, the promise of the transactional-causal family
//     (FastCCS, Eiger, Wren, EC; spec fastccs-tcc.md §1.2), as the spec's oracles C1–C6.
//
// # Serializability
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
// every replica agrees with it. A transaction of unknown outcome (its client lost the answer)
// counts as committed if the first replica installed one of its writes, and as aborted
// otherwise; the replica checks then hold it to that. Checking uses the recorded versions only,
// never values, so it needs no model of the store. It runs in time roughly linear in the size of
// the history: the graph is a few flat int32 arrays and the cycle search is Tarjan's strongly
// connected components algorithm with an explicit stack, so histories of millions of
// transactions need no deep stack.
//
// # Transactional causal consistency
//
// The history: a read-only transaction (ROT) has Reads and no Writes and must be Committed;
// Reads[i].Version is the writer of the version returned (txn.None for the initial version ⊥).
// A write-only transaction (WOT) has Writes and no Reads, and is Committed, Aborted or Unknown.
// A transaction with neither is a no-op and is ignored; one with both, or a ROT that is not
// committed, is malformed (and ignored). A session is one client's transactions
// (txn.ID.Client) in sequence order (txn.ID.Seq). The version order <_k of key k comes from
// h.Replicas: in a partitioned store each key is in its owner partition's VersionOrder only;
// with geo-replication several replicas hold it, and their orders must agree where they overlap
// (TCCDiverged otherwise) and are merged into one order that contains every version any of them
// installed.
//
// A WOT of Unknown outcome counts as committed if a replica installed one of its writes or a
// ROT read it, and as aborted otherwise. Its client never learned the outcome, so the session's
// later transactions do not depend on it: it has its session predecessors in its causal past
// but is not in its successors' (unless they read it, directly or not).
//
// The oracles: happens-before (⇝) is the transitive closure of session order (SO) and
// reads-from (WR: W ⇝ R when ROT R returned a version W wrote) over the committed
// transactions; Past(X) = {T : T ⇝ X}.
//
//   - C1 (TCCDirtyRead): every version returned is ⊥ or a version of that key written by a
//     committed WOT. Reading an aborted WOT, a transaction that did not write the key, or one
//     that is not in the history is a dirty read. (The spec's other dirty read, an intermediate
//     value of a WOT that wrote a key twice, cannot be expressed in a history: versions are
//     named by their writer and a WOT installs one version per key, spec A20.)
//   - C2 (TCCSnapshot): for every key k a ROT R read and every T ∈ Past(R) that wrote k, the
//     version returned is T's or later in <_k. This covers atomicity (fractured reads),
//     causality, read-your-writes, monotonic reads and writes-follow-reads.
//   - C3 (TCCWriteOrder): T1 ⇝ T2, both writing k, implies T1 <_k T2.
//   - C4 (TCCCutIsolation): a key a ROT lists twice has the same version both times.
//   - C5 (TCCRounds): no ROT took more than Options.MaxRounds rounds (if MaxRounds > 0).
//   - C6 (TCCVisibility): every ROT in Options.Final returned the last version in <_k of each
//     key.
//
// Besides the oracles it reports a cycle in SO ∪ WR (TCCCycle: the history contradicts
// itself, e.g. a ROT that read a WOT its own session issued later), replicas whose orders of a
// key disagree (TCCDiverged), version orders that disagree with the transactions (TCCVersionOrder:
// a committed write no replica installed, an installed version of an aborted transaction or of
// one that did not write the key or is not in the history, a writer listed twice) and malformed
// transactions (TCCMalformed). With Options.StrictG0 a cycle of write dependencies between
// concurrent WOTs (ww edges between consecutive versions; the spec's X13, Fig. 2.2) is reported
// in Report.Info: TCC allows it, so it never fails the check.
//
// Not flagged: stale reads (TCC has no recency bound beyond the reader's causal past), lost
// updates and write skew (impossible without read-write transactions), dirty writes between
// concurrent WOTs.
//
// The check makes one pass over the transactions in a topological order of SO ∪ WR, with
// causal pasts as persistent vector clocks over sessions (tcc.go describes the algorithm and its
// cost).
package checker

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/meridian-kv/meridian/protocol/txn"
	"github.com/meridian-kv/meridian/verify/history"
)

// Model is a consistency model Check can hold a history to.
type Model int

const (
	// Serializable checks one-copy serializability of the committed transactions (INV-1: no
	// Adya G0, G1a, G1c or G2 in the direct serialization graph), that every replica installed
	// every key's versions in the same order (INV-2) and that no aborted transaction's write was
	// installed (INV-11). Its anomalies are of the Kind constants' kinds. It is the zero value.
	Serializable Model = iota
	// Causal checks transactional causal consistency of a history of read-only and write-only
	// transactions (oracles C1–C6 over happens-before, the closure of session order and
	// reads-from), and that the replicas' version orders agree with each other and with the
	// transactions. Its anomalies are of the TCC constants' kinds.
	Causal
)

// String returns "serializable" or "causal", or "Model(n)" for a value that is neither.
func (m Model) String() string {
	switch m {
	case Serializable:
		return "serializable"
	case Causal:
		return "causal"
	}
	return fmt.Sprintf("Model(%d)", int(m))
}

// kinds returns the anomaly kinds m reports, in the order Report lists them.
func (m Model) kinds() []string {
	if m == Causal {
		return tccOracles
	}
	return kinds
}

// Options configures Check. The zero value checks serializability. With Model Causal and the
// other fields zero, Check checks C1–C4 only.
type Options struct {
	// Model is the consistency model to check the history against.
	Model Model
	// MaxRounds (Causal only; Serializable ignores it) bounds the rounds a ROT may take (C5,
	// white-box): 2 for FastCCS, 3 for Eiger (the third is a commit check), 2 for Wren, 1 for EC.
	// 0 leaves C5 unchecked.
	MaxRounds int
	// Final (Causal only; Serializable ignores it) lists ROTs the caller ran at quiescence, after
	// writes stopped and stabilization had time to run (C6): each must return the last version
	// in <_k of every key it read. An id that is not a committed ROT of the history is reported
	// as malformed.
	Final []txn.ID
	// StrictG0 (Causal only; Serializable ignores it) reports cycles of write dependencies
	// between concurrent WOTs in Report.Info (the spec's strict mode "G0 / no write cycles").
	// TCC allows them: they never fail.
	StrictG0 bool
	// SnapshotsPerDC (Serializable only) checks read-only snapshot transactions
	// (history.Txn.Snapshot) one datacenter at a time: the read-write transactions must be
	// serializable, and so must they together with the snapshots of each datacenter. It is the
	// guarantee of Ogre's RoT-Storage, whose datacenters apply independent writes in their own
	// orders, so that snapshots of two datacenters may see two independent writes in opposite
	// orders (a long fork), which a global check would report as G2.
	SnapshotsPerDC bool
}

// Check checks h against opts.Model (see the package documentation) and reports every violation
// it finds. It does not modify h. A Model that is neither Serializable nor Causal fails with one
// KindMalformed anomaly.
func Check(h *history.History, opts Options) Report {
	return check(&source{txns: txnSlice(h.Txns), replicas: h.Replicas}, opts)
}

// CheckLog is Check of the history of the transactions of l and the version orders of
// replicas, read from the log's compact form without building a []history.Txn of them all
// (except under SnapshotsPerDC or with transactions of unknown outcome under Serializable).
func CheckLog(l *history.Log, replicas []history.Replica, opts Options) Report {
	return check(&source{txns: l, replicas: replicas}, opts)
}

// txnSource is read access to a history's transactions: a []history.Txn or a history.Log.
type txnSource interface {
	Len() int
	// TxnReusing returns the i-th transaction, perhaps in buf's slices (history.Log.TxnReusing):
	// valid until the next call with the same buf. The checker does not modify its slices.
	TxnReusing(i int, buf *history.Txn) history.Txn
}

// txnSlice is a txnSource over a slice.
type txnSlice []history.Txn

func (s txnSlice) Len() int                                     { return len(s) }
func (s txnSlice) TxnReusing(i int, _ *history.Txn) history.Txn { return s[i] }

// source is the history a check reads: its transactions and the replicas' version orders.
type source struct {
	txns     txnSource
	replicas []history.Replica
}

func check(h *source, opts Options) Report {
	switch opts.Model {
	case Serializable:
		if opts.SnapshotsPerDC {
			return checkSnapshotsPerDC(h)
		}
		return checkSerializable(h)
	case Causal:
		return checkCausal(h, opts)
	}
	a := Anomaly{Kind: KindMalformed, Detail: fmt.Sprintf("Options.Model is %v, neither Serializable nor Causal", opts.Model)}
	return Report{Model: opts.Model, Anomalies: []Anomaly{a}, Counts: map[string]int{KindMalformed: 1}}
}

// Anomaly kinds of the Serializable model, in the order Report lists them.
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

// Anomaly is one violation found in a history (or, in Report.Info, one finding that does not
// fail the check).
type Anomaly struct {
	// Kind is what was violated. Under Serializable it is one of the Kind constants: "G0",
	// "G1a", "G1c", "G2", "unknown-version", "diverged", "aborted-installed", "lost-commit" or
	// "malformed". Under Causal it is one of the TCC constants: an oracle "C1" … "C6", or
	// "cycle", "diverged", "version-order", "malformed", or "G0" for info.
	Kind string
	// Txns are the transactions involved. Under Serializable: for a cycle (G0, G1c, G2) the
	// transactions on the cycle, in cycle order; for G1a and unknown-version reads, the reader
	// and then the writer; for diverged, the two replicas' writers at the first differing
	// position (those that exist); otherwise the one transaction concerned. Under Causal: for
	// C1, C4, C5 and C6 the ROT (then, for C1, the writer read); for C2 the ROT and the writer
	// in its past that it missed; for C3 the earlier and the later writer; for cycles the
	// transactions on the cycle in cycle order; for diverged the two writers ordered
	// differently.
	Txns []txn.ID
	// Key is the key concerned, if any. Only Causal sets it (Serializable names keys in Detail).
	Key string
	// Read is the version returned (C1, C2, C6), or for C3 the later writer's own version.
	// txn.None is ⊥, and where not applicable. Only Causal sets it.
	Read txn.ID
	// Required is the version required at least: for C2 the latest write to Key in the ROT's
	// causal past, for C3 the causally earlier writer that had to come first, for C6 the last
	// version of Key. txn.None where not applicable. Only Causal sets it.
	Required txn.ID
	// Detail says what happened in words, naming transactions by id. For a Serializable cycle it
	// is the cycle with its edges, e.g. "t3.1 -rw(k5)-> t4.2 -wr(k7)-> t3.1".
	Detail string
}

// String renders the anomaly as "<kind>: <detail>".
func (a Anomaly) String() string { return a.Kind + ": " + a.Detail }

// Report is the outcome of Check.
type Report struct {
	// OK is true if and only if Anomalies is empty.
	OK bool
	// Model is the model the history was checked against.
	Model Model
	// Anomalies are the violations, grouped by kind in the order of the model's kind constants
	// (so under Serializable the most serious come first), and in a deterministic order within
	// each kind. Under Serializable each group of transactions that cannot be serialized (a
	// strongly connected component of the serialization graph) yields one cycle.
	Anomalies []Anomaly
	// Info are findings that do not fail the check: write cycles (TCCWriteCycle), found only by
	// Causal with Options.StrictG0.
	Info []Anomaly
	// Counts is the number of anomalies (not info) per kind.
	Counts map[string]int
	// ROTs counts the committed read-only transactions checked; only Causal counts them.
	ROTs int
	// Committed and Aborted count the checked transactions by outcome, those of unknown outcome
	// resolved as the package documentation describes (malformed ones, which are ignored, count
	// in neither): under Serializable all transactions, under Causal the WOTs.
	Committed, Aborted int
	// Unchecked counts the transactions C2 and C3 could not check because they lie on or after
	// a causal cycle; only Causal sets it.
	Unchecked int
}

// Summary renders the report on one line. If it is OK: "ok: 1234 committed, 56 aborted" under
// Serializable, "ok: 900 ROTs, 95 committed WOTs, 5 aborted" under Causal. Otherwise
// "FAILED: 3 anomalies (2 G2, 1 diverged); first: G2: ...", the counts in report order. Info
// findings are counted at the end, as in " [1 info]".
func (r Report) Summary() string {
	var s string
	switch {
	case r.OK && r.Model == Causal:
		s = fmt.Sprintf("ok: %d ROTs, %d committed WOTs, %d aborted", r.ROTs, r.Committed, r.Aborted)
	case r.OK:
		s = fmt.Sprintf("ok: %d committed, %d aborted", r.Committed, r.Aborted)
	default:
		var parts []string
		for _, k := range r.Model.kinds() {
			if n := r.Counts[k]; n > 0 {
				parts = append(parts, fmt.Sprintf("%d %s", n, k))
			}
		}
		noun := "anomalies"
		if len(r.Anomalies) == 1 {
			noun = "anomaly"
		}
		s = fmt.Sprintf("FAILED: %d %s (%s); first: %v", len(r.Anomalies), noun, strings.Join(parts, ", "), r.Anomalies[0])
	}
	if len(r.Info) > 0 {
		s += fmt.Sprintf(" [%d info]", len(r.Info))
	}
	return s
}

// listMax is how many anomalies (and info findings) String lists.
const listMax = 20

// String renders the summary and then the first anomalies and info findings, one per line:
// what a test prints when it fails.
func (r Report) String() string {
	var b strings.Builder
	b.WriteString(r.Summary())
	for _, list := range []struct {
		name string
		as   []Anomaly
	}{{"", r.Anomalies}, {"info ", r.Info}} {
		for i, a := range list.as {
			if i == listMax {
				fmt.Fprintf(&b, "\n  ... %d more", len(list.as)-i)
				break
			}
			fmt.Fprintf(&b, "\n  %s%v", list.name, a)
		}
	}
	return b.String()
}

// checkSerializable is Check for the Serializable model.
func checkSerializable(h *source) Report {
	h = resolveUnknown(h)
	c := newChecker(h)
	if len(h.replicas) == 0 {
		if h.txns.Len() > 0 {
			c.report(KindMalformed, "the history has no replica, so there is no version order to check against")
		}
	} else {
		first := c.install(&h.replicas[0], nil)
		c.findCycles(c.buildGraph(first))
		c.checkInstalled(first)
		for i := 1; i < len(h.replicas); i++ {
			c.checkInstalled(c.install(&h.replicas[i], first))
		}
	}
	slices.SortStableFunc(c.anomalies, func(a, b Anomaly) int {
		return slices.Index(kinds, a.Kind) - slices.Index(kinds, b.Kind)
	})
	r := Report{Model: Serializable, Anomalies: c.anomalies, OK: len(c.anomalies) == 0, Counts: make(map[string]int)}
	for _, a := range c.anomalies {
		r.Counts[a.Kind]++
	}
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
	h         *source
	anomalies []Anomaly

	ids       []txn.ID         // node -> transaction id
	committed []bool           // node -> committed (otherwise aborted)
	txnIdx    []int32          // node -> index in h.txns
	node      map[txn.ID]int32 // transaction id -> node

	keys *txn.KeyTable // key numbers

	// Declared writes: node v wrote key numbers writeKeys[writeStart[v]:writeStart[v+1]], sorted.
	writeStart []int32
	writeKeys  []int32

	committedReads int // the number of reads of committed transactions
}

func (c *checker) report(kind, detail string, txns ...txn.ID) {
	c.anomalies = append(c.anomalies, Anomaly{Kind: kind, Txns: txns, Detail: detail})
}

// newChecker numbers the transactions and keys. Keys are numbered in order of first appearance
// among the writes, then the keys only replicas mention, sorted, so that every run over the same
// history reports the same cycles.
func newChecker(h *source) *checker {
	n := h.txns.Len()
	c := &checker{
		h:          h,
		node:       make(map[txn.ID]int32, n),
		keys:       txn.NewKeyTable(),
		writeStart: make([]int32, 1, n+1),
	}
	var buf history.Txn
	for i := range n {
		t := h.txns.TxnReusing(i, &buf)
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
		if t.Status == txn.Committed {
			c.committedReads += len(t.Reads)
		}
		c.txnIdx = append(c.txnIdx, int32(i))
		from := len(c.writeKeys)
		for _, key := range t.Writes {
			c.writeKeys = append(c.writeKeys, c.keys.Number(key))
		}
		w := c.writeKeys[from:]
		slices.Sort(w)
		c.writeKeys = c.writeKeys[:from+len(slices.Compact(w))]
		c.writeStart = append(c.writeStart, int32(len(c.writeKeys)))
	}
	var extra []string
	for _, rep := range h.replicas {
		for key := range rep.VersionOrder {
			if _, ok := c.keys.Find(key); !ok {
				extra = append(extra, key)
			}
		}
	}
	slices.Sort(extra)
	for _, key := range slices.Compact(extra) {
		c.keys.Number(key)
	}
	return c
}

// resolveUnknown returns h with every transaction of unknown outcome decided by the first
// replica's version order, copying the transactions only if there is one to decide.
func resolveUnknown(h *source) *source {
	unknown := false
	var buf history.Txn
	for i := range h.txns.Len() {
		if h.txns.TxnReusing(i, &buf).Status == txn.Unknown {
			unknown = true
			break
		}
	}
	if !unknown {
		return h
	}
	var installed func(id txn.ID, keys []string) bool
	if len(h.replicas) > 0 {
		order := h.replicas[0].VersionOrder
		installed = func(id txn.ID, keys []string) bool {
			for _, k := range keys {
				if slices.Contains(order[k], id) {
					return true
				}
			}
			return false
		}
	}
	resolved := make(txnSlice, h.txns.Len())
	for i := range resolved {
		t := h.txns.TxnReusing(i, &history.Txn{}) // kept: new slices
		if t.Status == txn.Unknown {
			if installed != nil && installed(t.ID, t.Writes) {
				t.Status = txn.Committed
			} else {
				t.Status, t.Reason = txn.Aborted, "unknown-outcome"
			}
		}
		resolved[i] = t
	}
	return &source{txns: resolved, replicas: h.replicas}
}

// checkSnapshotsPerDC checks the read-write transactions of h (with the replicas' version
// orders), then, for each datacenter with snapshot transactions, the read-write transactions
// together with that datacenter's snapshots, and reports every anomaly found once.
func checkSnapshotsPerDC(h *source) Report {
	byDC := map[string][]history.Txn{}
	var rw []history.Txn
	for i := range h.txns.Len() {
		if t := h.txns.TxnReusing(i, &history.Txn{}); t.Snapshot { // kept: new slices
			byDC[t.DC] = append(byDC[t.DC], t)
		} else {
			rw = append(rw, t)
		}
	}
	r := checkSerializable(&source{txns: txnSlice(rw), replicas: h.replicas})
	seen := map[string]bool{}
	for _, a := range r.Anomalies {
		seen[a.String()] = true
	}
	for _, dc := range slices.Sorted(maps.Keys(byDC)) {
		part := checkSerializable(&source{txns: txnSlice(append(slices.Clip(rw), byDC[dc]...)), replicas: h.replicas})
		for _, a := range part.Anomalies {
			if !seen[a.String()] {
				seen[a.String()] = true
				r.Anomalies = append(r.Anomalies, a)
				r.Counts[a.Kind]++
			}
		}
		r.Committed += len(byDC[dc])
	}
	slices.SortStableFunc(r.Anomalies, func(a, b Anomaly) int { return slices.Index(kinds, a.Kind) - slices.Index(kinds, b.Kind) })
	r.OK = len(r.Anomalies) == 0
	return r
}
