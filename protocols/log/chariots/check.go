package chariots

import (
	"fmt"
	"slices"
	"sort"

	"github.com/meridian-kv/meridian/protocol"
	"github.com/meridian-kv/meridian/protocol/txn"
	"github.com/meridian-kv/meridian/protocols/log/flstore"
)

// Snapshot is a Chariots deployment's state as the checker sees it, taken from the stage
// machines between two events.
type Snapshot struct {
	Layout *flstore.Layout
	DCs    int
	// Logs[dc] maps each filled position to its record; At[dc] to the maintainer holding it.
	Logs []map[uint64]*Record
	At   []map[uint64]protocol.NodeID
	// HL is every maintainer's head of the log; Journals every maintainer's journal.
	HL       map[protocol.NodeID]uint64
	Journals map[protocol.NodeID]flstore.Journal
	// Truth[dc] is the datacenter's own row: the newest MaxTOId of its token (the element-wise
	// maximum over its queues' last copies of the newest generation; MaxTOId only grows within
	// one). LastLId and Journal likewise.
	Truth   [][]uint64
	LastLId []uint64
	Journal []flstore.Journal
	// Gen[dc] is the generation of those copies (0: no queue holds one, or a snapshot built
	// from read-back logs, which has no Gen).
	Gen []uint64
	// Tables are the senders' ATables.
	Tables map[protocol.NodeID][][]uint64
}

// Collected counts the records of every datacenter's log and how many of them were
// garbage-collected (Hyksos's keep-latest collection leaves their positions as markers).
func (s Snapshot) Collected() (collected, records int) {
	for _, log := range s.Logs {
		for _, r := range log {
			records++
			if r.Collected {
				collected++
			}
		}
	}
	return collected, records
}

// Take builds the snapshot of a deployment whose node id runs replica(id).
func Take(c Config, replica func(protocol.NodeID) protocol.Replica) Snapshot {
	l := c.Layout
	s := Snapshot{Layout: l, DCs: c.DCs, HL: map[protocol.NodeID]uint64{}, Journals: map[protocol.NodeID]flstore.Journal{},
		Tables: map[protocol.NodeID][][]uint64{}}
	for dc := range c.DCs {
		s.Logs = append(s.Logs, map[uint64]*Record{})
		s.At = append(s.At, map[uint64]protocol.NodeID{})
		s.Truth = append(s.Truth, make([]uint64, c.DCs))
		s.LastLId = append(s.LastLId, 0)
		s.Journal = append(s.Journal, nil)
		s.Gen = append(s.Gen, 0)
		for _, m := range l.All(dc, flstore.Maintainer) {
			st := replica(m).(*flstore.LogMaintainer).State()
			for lid, r := range st.Filled {
				if _, dup := s.Logs[dc][lid]; dup {
					s.At[dc][lid] = -1 // two maintainers hold one position: CH-I4 reports it
				} else {
					s.At[dc][lid] = m
				}
				s.Logs[dc][lid] = r
			}
			s.HL[m], s.Journals[m] = st.HL, st.Journal
		}
		gen := uint64(0) // the newest generation's copies only: a rebuild truncates
		for _, q := range l.All(dc, flstore.Queue) {
			if tk := replica(q).(*Queue).LastToken(); tk != nil {
				gen = max(gen, tk.Gen)
			}
		}
		s.Gen[dc] = gen
		for _, q := range l.All(dc, flstore.Queue) {
			if tk := replica(q).(*Queue).LastToken(); tk != nil && tk.Gen == gen {
				s.Truth[dc] = flstore.MaxVec(s.Truth[dc], tk.MaxTOId)
				s.LastLId[dc] = max(s.LastLId[dc], tk.LastLId)
				if len(tk.Journal) > len(s.Journal[dc]) {
					s.Journal[dc] = tk.Journal
				}
			}
		}
		for _, sn := range l.All(dc, flstore.Sender) {
			s.Tables[sn] = replica(sn).(*Sender).Table()
		}
	}
	return s
}

// prefix returns the length of dc's gap-free prefix.
func (s *Snapshot) prefix(dc int) uint64 {
	p := uint64(0)
	for s.Logs[dc][p+1] != nil {
		p++
	}
	return p
}

// sortedLIds returns dc's filled positions in order.
func (s *Snapshot) sortedLIds(dc int) []uint64 {
	lids := make([]uint64, 0, len(s.Logs[dc]))
	for l := range s.Logs[dc] {
		lids = append(lids, l)
	}
	sort.Slice(lids, func(i, j int) bool { return lids[i] < lids[j] })
	return lids
}

// Checker checks the invariants CH-I1 to CH-I8 on successive snapshots of one run (CH-I10:
// the same invariants through elasticity events); it remembers what must never decrease.
// CH-I8 (explicit order) holds in the host's log: MinLId is a position of the log its client
// appended to, meaningless in the other datacenters' logs.
type Checker struct {
	prevHL    map[protocol.NodeID]uint64
	prevTable map[protocol.NodeID][][]uint64
	// token is, per datacenter, the token as the last snapshot that had one saw it: while no
	// queue holds a copy (the only queue restarted empty, before the rebuild), its journal, and
	// its row and last position raised to what the log holds, bound the log.
	token map[int]tokenView
	// lostGen[dc] is the generation whose newest token a queue of dc may have held when it
	// restarted empty (its last copy's): until a newer generation's token exists, the surviving
	// copies may be older than what that token assigned (the rebuild truncates it), so the last
	// view raised to the log bounds the log, as when no queue holds a copy.
	lostGen map[int]uint64
}

// tokenView is what a snapshot knows of a datacenter's token.
type tokenView struct {
	truth   []uint64
	lastLId uint64
	journal flstore.Journal
}

// NewChecker returns a checker with no history.
func NewChecker() *Checker {
	return &Checker{prevHL: map[protocol.NodeID]uint64{}, prevTable: map[protocol.NodeID][][]uint64{}, token: map[int]tokenView{},
		lostGen: map[int]uint64{}}
}

// Restarted tells the checker that node id restarted empty (spec 5.13), old being its replica
// before the restart: what it knew is gone, so its head of log or ATable starts again from zero
// and is held monotone from there on (CH-I6 holds for what it knows; a restarted sender learns
// the table again); a queue's last token copy names the generation whose newest token may have
// been lost with it (lostGen).
func (c *Checker) Restarted(id protocol.NodeID, old protocol.Replica) {
	delete(c.prevHL, id)
	delete(c.prevTable, id)
	for w, ok := old.(protocol.Wrapper); ok; w, ok = old.(protocol.Wrapper) {
		old = w.Inner()
	}
	if q, ok := old.(*Queue); ok && q.lastTok != nil {
		c.lostGen[q.dc] = max(c.lostGen[q.dc], q.lastTok.Gen)
	}
}

// originKey names the client append a local record came from.
type originKey struct {
	host   int
	client txn.ClientID
	seq    uint64
}

// Check returns the first violation in s, or nil.
func (c *Checker) Check(s Snapshot) error {
	for dc := range s.DCs {
		gen := uint64(0)
		if dc < len(s.Gen) {
			gen = s.Gen[dc]
		}
		lost, ok := c.lostGen[dc]
		if ok && gen > lost {
			delete(c.lostGen, dc)
			ok = false
		}
		v, seen := c.token[dc]
		switch {
		case s.Journal[dc] != nil && !ok:
			c.token[dc] = tokenView{s.Truth[dc], s.LastLId[dc], s.Journal[dc]}
		case seen:
			// No queue holds a copy, or the newest token may have been lost: the last view (and
			// any copy left), raised to what the log holds (the token moved on after that view
			// was taken).
			if s.Journal[dc] != nil {
				v.truth, v.lastLId = flstore.MaxVec(v.truth, s.Truth[dc]), max(v.lastLId, s.LastLId[dc])
				if len(s.Journal[dc]) > len(v.journal) {
					v.journal = s.Journal[dc]
				}
			}
			s.Truth[dc], s.LastLId[dc], s.Journal[dc] = slices.Clone(v.truth), v.lastLId, v.journal
			// The lost token may have started an epoch the maintainers learned from its
			// assignments: the longest of their journals that extends the view's (as the
			// rebuild takes it).
			for _, m := range s.Layout.All(dc, flstore.Maintainer) {
				if j := s.Journals[m]; len(j) > len(s.Journal[dc]) && j.Extends(s.Journal[dc]) {
					s.Journal[dc] = j
				}
			}
			for l, r := range s.Logs[dc] {
				s.LastLId[dc] = max(s.LastLId[dc], l)
				if r.Host >= 0 && r.Host < len(s.Truth[dc]) {
					s.Truth[dc][r.Host] = max(s.Truth[dc][r.Host], r.TOId)
				}
			}
		}
	}
	for dc := range s.DCs {
		if err := c.checkDC(&s, dc); err != nil {
			return fmt.Errorf("datacenter %d: %w", dc, err)
		}
	}
	return c.checkTables(&s)
}

func (c *Checker) checkDC(s *Snapshot, dc int) error {
	p := s.prefix(dc)
	lastTOId := make([]uint64, s.DCs)
	inPrefix := make([]uint64, s.DCs)
	where := map[flstore.Key]uint64{}
	origins := map[originKey]uint64{}
	for _, l := range s.sortedLIds(dc) {
		r := s.Logs[dc][l]
		// CH-I4: stored at its owner under the journal; within the positions assigned.
		if at := s.At[dc][l]; at < 0 || s.Journal[dc] == nil || s.Journal[dc].Owner(l) != at {
			return fmt.Errorf("CH-I4: position %d held by %d, not by its owner", l, at)
		}
		if l > s.LastLId[dc] || r.LId != l {
			return fmt.Errorf("CH-I4: position %d (record says %d) beyond the last assigned %d", l, r.LId, s.LastLId[dc])
		}
		if r.Host < 0 || r.Host >= s.DCs || r.TOId == 0 || len(r.Deps) != s.DCs {
			return fmt.Errorf("position %d holds a malformed record %+v", l, r)
		}
		// CH-I3: once per datacenter, by name and by client append.
		k := r.Key()
		if prev, dup := where[k]; dup {
			return fmt.Errorf("CH-I3: record %v at positions %d and %d", k, prev, l)
		}
		where[k] = l
		if r.Client != 0 {
			o := originKey{r.Host, r.Client, r.AppendSeq}
			if prev, dup := origins[o]; dup {
				return fmt.Errorf("CH-I3: client %d's append %d logged twice, at positions %d and %d", r.Client, r.AppendSeq, prev, l)
			}
			origins[o] = l
		}
		// CH-I1: per host, TOIds increase with positions, and are 1..k in the gap-free prefix.
		if r.TOId <= lastTOId[r.Host] {
			return fmt.Errorf("CH-I1: host %d's TOId %d at position %d after its TOId %d", r.Host, r.TOId, l, lastTOId[r.Host])
		}
		lastTOId[r.Host] = r.TOId
		if l <= p {
			inPrefix[r.Host]++
			if r.TOId != inPrefix[r.Host] {
				return fmt.Errorf("CH-I1: host %d's TOId %d at position %d is its record number %d of the prefix", r.Host, r.TOId, l, inPrefix[r.Host])
			}
		}
		// CH-I8: a record appended after position MinLId of its host's log is above it there.
		if r.MinLId > 0 && r.Host == dc && l <= r.MinLId {
			return fmt.Errorf("CH-I8: record %v at position %d, asked to follow position %d", k, l, r.MinLId)
		}
		// CH-I6 (own row): nothing logged beyond the token's MaxTOId.
		if r.TOId > s.Truth[dc][r.Host] {
			return fmt.Errorf("CH-I6: host %d's TOId %d logged beyond MaxTOId %d", r.Host, r.TOId, s.Truth[dc][r.Host])
		}
		// CH-I7: a collected record is held by every datacenter.
		if r.Collected {
			for j := range s.DCs {
				if s.Truth[j][r.Host] < r.TOId {
					return fmt.Errorf("CH-I7: record %v collected while datacenter %d has only up to TOId %d", k, j, s.Truth[j][r.Host])
				}
			}
		}
	}
	// CH-I2: every dependency is at an earlier position (checked where it must be filled: for
	// records in the gap-free prefix, and for any dependency already filled).
	for l, r := range s.Logs[dc] {
		for h, d := range r.Deps {
			if d == 0 {
				continue
			}
			dl, ok := where[flstore.Key{Host: h, TOId: d}]
			if (!ok && l <= p) || (ok && dl >= l) {
				return fmt.Errorf("CH-I2: record %v at position %d depends on (%d,%d), which is %s", r.Key(), l, h, d, posString(dl, ok))
			}
		}
	}
	// CH-I5: a head of the log covers filled positions only, and never decreases.
	for _, m := range s.Layout.All(dc, flstore.Maintainer) {
		hl := s.HL[m]
		if hl > p {
			return fmt.Errorf("CH-I5: maintainer %d reports head of log %d over the gap at %d", m, hl, p+1)
		}
		if hl < c.prevHL[m] {
			return fmt.Errorf("CH-I5: maintainer %d's head of log went from %d back to %d", m, c.prevHL[m], hl)
		}
		c.prevHL[m] = hl
		if j := s.Journals[m]; s.Journal[dc] != nil && !s.Journal[dc].Extends(j) {
			return fmt.Errorf("CH-I4: maintainer %d's journal is not a prefix of the token's", m)
		}
	}
	return nil
}

func posString(l uint64, ok bool) string {
	if !ok {
		return "missing"
	}
	return fmt.Sprintf("at position %d", l)
}

// checkTables checks CH-I6: ATable entries never decrease and never claim more than the
// datacenter they describe has logged.
func (c *Checker) checkTables(s *Snapshot) error {
	ids := make([]protocol.NodeID, 0, len(s.Tables))
	for id := range s.Tables {
		ids = append(ids, id)
	}
	sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
	for _, id := range ids {
		t, prev := s.Tables[id], c.prevTable[id]
		for j := range t {
			for k := range t[j] {
				if t[j][k] > s.Truth[j][k] {
					return fmt.Errorf("CH-I6: sender %d believes datacenter %d has host %d up to %d, it has %d", id, j, k, t[j][k], s.Truth[j][k])
				}
				if prev != nil && t[j][k] < prev[j][k] {
					return fmt.Errorf("CH-I6: sender %d's ATable entry [%d][%d] went from %d back to %d", id, j, k, prev[j][k], t[j][k])
				}
			}
		}
		cp := make([][]uint64, len(t))
		for j := range t {
			cp[j] = append([]uint64(nil), t[j]...)
		}
		c.prevTable[id] = cp
	}
	return nil
}

// CheckConverged checks a quiescent deployment (faults healed, every append answered): every
// datacenter's log is gap-free over exactly the positions assigned (CH-I4), holds every record
// exactly once (CH-I3), and its own row counts exactly its records per host (CH-I6).
func CheckConverged(s Snapshot) error {
	var first map[flstore.Key]bool
	for dc := range s.DCs {
		p := s.prefix(dc)
		if p != s.LastLId[dc] || uint64(len(s.Logs[dc])) != p {
			return fmt.Errorf("datacenter %d: CH-I4: %d positions assigned, gap-free prefix %d, %d filled", dc, s.LastLId[dc], p, len(s.Logs[dc]))
		}
		keys := map[flstore.Key]bool{}
		count := make([]uint64, s.DCs)
		for _, r := range s.Logs[dc] {
			keys[r.Key()] = true
			count[r.Host]++
		}
		for h := range s.DCs {
			if count[h] != s.Truth[dc][h] {
				return fmt.Errorf("datacenter %d: CH-I6: %d records of host %d logged, MaxTOId %d", dc, count[h], h, s.Truth[dc][h])
			}
		}
		if first == nil {
			first = keys
			continue
		}
		if len(keys) != len(first) {
			return fmt.Errorf("CH-I3: datacenter %d holds %d records, datacenter 0 %d", dc, len(keys), len(first))
		}
		for k := range keys {
			if !first[k] {
				return fmt.Errorf("CH-I3: datacenter %d holds %v, datacenter 0 does not", dc, k)
			}
		}
	}
	return nil
}
