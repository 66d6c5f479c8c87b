package flstore

import (
	"maps"
	"slices"
	"sort"

	"github.com/meridian-kv/meridian/protocol"
	"github.com/meridian-kv/meridian/protocol/txn"
)

// HLRule selects how a maintainer computes the head of the log (spec 3.4).
type HLRule uint8

// The two rules. Both are safe; Exact is less stale.
const (
	// Exact is HL = min_j nextFree_j − 1 (spec A5).
	Exact HLRule = iota
	// SourceRule is the source's HL = min_j V[j], V[j] the last position maintainer j filled with
	// all of its earlier ones.
	SourceRule
)

// MaintainerConfig configures a log maintainer.
type MaintainerConfig struct {
	Self    protocol.NodeID
	DC      int
	Journal Journal
	// Peers are every maintainer of the datacenter, spares included: a journal naming any
	// other node is malformed.
	Peers []protocol.NodeID
	// Indexers receive the tags of persisted records (by hash of the tag name); nil: none.
	Indexers []protocol.NodeID
	Rule     HLRule
	// Chariots: positions come from queues (Assign) instead of being chosen here. Queues are
	// the nodes whose assignments it takes, and DCs the number of datacenters (the length of
	// a record's dependency vector).
	Chariots bool
	Queues   []protocol.NodeID
	DCs      int
	GossipUs int64
	// NoOpAfterUs, if positive (standalone), fills the rest of the current range with no-op
	// records once this maintainer has held the head of the log back for that long: its next
	// free position is the lowest of all, and another maintainer has filled a later one (spec
	// A6 says "lags the others' maximum next free position by more than a range", which
	// cascades: a filled range moves next by a whole round, so the next maintainer then lags).
	NoOpAfterUs int64
	// GCEveryUs, if positive (Chariots), garbage-collects records known to every datacenter that
	// often (spec 4 GC rule, with the horizon senders pass in FetchReq).
	GCEveryUs int64
	// GCKeepLatest restricts that collection to superseded records (compaction by tag: see
	// compact.go), so that Hyksos keeps every key's current value.
	GCKeepLatest bool
	// UnsafeAnswerOnPersist (Chariots, a broken variant for negative controls) answers an append
	// on persisting it rather than once the head of the log passes it.
	UnsafeAnswerOnPersist bool
}

// progress is one maintainer's last gossiped progress.
type progress struct {
	next, contig uint64
	epochs       int // length of the journal it was computed under
}

// MaintainerState is what a maintainer holds, for the checkers; Filled is read from its Disk.
type MaintainerState struct {
	Filled  map[uint64]*Record
	HL      uint64
	Journal Journal
}

// LogMaintainer persists its share of one datacenter's log and serves it (spec 3, 5.6). Its
// records live on its Disk (protocol.Disk; diskRecords), written as it accepts them and read to
// serve reads and fetches; in memory and in its checkpoints it keeps only metadata: its progress,
// the positions filled out of order above it, its peers', the index entries not yet
// acknowledged and the garbage-collection horizon.
type LogMaintainer struct {
	env  protocol.Env
	cfg  MaintainerConfig
	disk diskRecords
	// observed mirrors the records on the Disk once State has been called (by a checker, in
	// the simulator and tests; no real node calls it), so that a checker taking snapshots as a
	// run goes does not decode the whole log each time. It is no part of the replica's state.
	observed map[uint64]*Record
	// above holds the own positions filled above next (Chariots: assignments arrive out of
	// order); every own position below next is filled.
	above  map[uint64]bool
	count  uint64 // records persisted (no-op fillers included)
	next   uint64 // first own unfilled position (None: owns no more)
	contig uint64 // last own position below next
	peers  map[protocol.NodeID]progress
	hl     uint64
	// waiting holds standalone appends with MinLId ≥ next, in arrival order (spec 3.6).
	waiting   []*Record
	unindexed map[protocol.NodeID][]IndexEntry
	// claimed is, per indexer, the last claim it acknowledged (IndexAdd.Through).
	claimed    map[protocol.NodeID]indexClaim
	lagSinceUs int64
	// horizon is, per host, the highest TOId every datacenter holds (from senders' FetchReq);
	// gcTo, per host, the TOId up to which records were collected (Chariots). A record of this
	// datacenter at or below gcTo is no more exposed to senders.
	horizon  []uint64
	gcTo     []uint64
	lastGCUs int64
	// gen is the token generation this maintainer is in (Chariots, Freeze); frozen, that it
	// takes no assignment until the generation's Truncate.
	gen    uint64
	frozen bool
	// lost, if set, says why this maintainer stopped: its records are gone (Failure).
	lost string
	// unanswered are the answers to this datacenter's appends it persisted above the head of
	// the log (Chariots), in position order: sent as the head of the log passes them (raiseHL).
	unanswered []answer
}

// answer is the reply owed to the client of the local record at position LId.
type answer struct {
	LId     uint64
	Client  txn.ClientID
	CallSeq uint64
	TOId    uint64
	Via     protocol.NodeID
}

// Timer ids of a maintainer.
const (
	gossipTimer protocol.TimerID = 1
)

// NewMaintainer builds a maintainer.
func NewMaintainer(cfg MaintainerConfig, env protocol.Env) *LogMaintainer {
	m := &LogMaintainer{env: env, cfg: cfg, disk: diskRecords{protocol.DiskOf(env)}, above: map[uint64]bool{},
		peers: map[protocol.NodeID]progress{}, unindexed: map[protocol.NodeID][]IndexEntry{}, claimed: map[protocol.NodeID]indexClaim{}}
	if cfg.Chariots {
		m.gcTo = make([]uint64, cfg.DCs)
	}
	m.next = cfg.Journal.NextOwned(cfg.Self, 0)
	return m
}

// Handled counts the records this maintainer persisted (no-op fillers included).
func (m *LogMaintainer) Handled() uint64 { return m.count }

// Counted is implemented by every stage machine of the log family: Handled counts the records
// it handled (persisted, batched, forwarded, assigned, shipped or received), for per-stage
// throughput.
type Counted interface {
	Handled() uint64
}

// State returns the maintainer's log share (read from its Disk), head of log and journal
// (shared: do not modify).
func (m *LogMaintainer) State() MaintainerState {
	if m.observed == nil {
		m.observed = map[uint64]*Record{}
		m.disk.records(1, None, func(r *Record) bool {
			m.observed[r.LId] = r
			return true
		})
	}
	return MaintainerState{Filled: maps.Clone(m.observed), HL: m.hl, Journal: m.cfg.Journal}
}

// putRecord stores r on the Disk and, once State has been called, in observed too.
func (m *LogMaintainer) putRecord(r *Record) {
	m.disk.put(r)
	if m.observed != nil {
		m.observed[r.LId] = r.Clone()
	}
}

// filled reports whether own position l is filled.
func (m *LogMaintainer) filled(l uint64) bool { return l < m.next || m.above[l] }

// Start arms the gossip timer.
func (m *LogMaintainer) Start() { m.env.SetTimer(m.cfg.GossipUs, gossipTimer) }

// HandleTimer gossips progress, resends unacknowledged index entries, fills idle ranges and
// collects garbage.
func (m *LogMaintainer) HandleTimer(id protocol.TimerID) {
	if id != gossipTimer {
		return
	}
	if m.lost != "" {
		return
	}
	m.env.SetTimer(m.cfg.GossipUs, gossipTimer)
	// A frozen maintainer's progress may be truncated: its peers take only its HL (Frozen).
	g := &HLGossip{Next: m.next, Contig: m.contig, Journal: m.cfg.Journal, Gen: m.gen, HL: m.hl, Frozen: m.frozen}
	for _, p := range m.maintainers() {
		if p != m.cfg.Self {
			m.env.Send(p, g)
		}
	}
	m.sendIndex()
	m.fillIdle()
	if m.cfg.GCEveryUs > 0 && m.env.NowUs()-m.lastGCUs >= m.cfg.GCEveryUs {
		m.lastGCUs = m.env.NowUs()
		m.collect()
	}
	m.updateHL()
}

// maxIndexBatch bounds the entries of one IndexAdd.
const maxIndexBatch = 1000

// sendIndex sends every indexer its unacknowledged entries and, when they all fit, the claim
// that it has every entry of this maintainer's positions below its next free one; it sends
// while entries are unacknowledged or the claim moved past the acknowledged one. In Chariots
// mode entries and claims go out only up to the head of the log (a token rebuild may truncate
// what is above it).
func (m *LogMaintainer) sendIndex() {
	through := m.next - 1 // every own position up to it is filled, its entries queued
	if m.next == None {
		through = None
	}
	limit := uint64(None)
	if m.cfg.Chariots {
		limit = m.hl
		through = min(through, limit)
	}
	for _, ix := range m.cfg.Indexers {
		es := m.unindexed[ix]
		if limit != None {
			es = entriesUpTo(es, limit)
		}
		add := &IndexAdd{Entries: append([]IndexEntry(nil), es[:min(len(es), maxIndexBatch)]...)} // a copy: es changes
		if len(es) <= maxIndexBatch && through > 0 {
			add.Through, add.Epochs = through, len(m.cfg.Journal)
		}
		if c := m.claimed[ix]; len(es) > 0 || add.Epochs > c.epochs || (add.Epochs == c.epochs && add.Through > c.through) {
			m.env.Send(ix, add)
		}
	}
}

// maintainers lists every maintainer of the journal, sorted.
func (m *LogMaintainer) maintainers() []protocol.NodeID { return m.cfg.Journal.maintainers() }

// maintainers lists every maintainer of the journal, sorted.
func (j Journal) maintainers() []protocol.NodeID {
	seen := map[protocol.NodeID]bool{}
	var out []protocol.NodeID
	for _, e := range j {
		for _, x := range e.Maintainers {
			if !seen[x] {
				seen[x] = true
				out = append(out, x)
			}
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out
}

// HandleMessage processes gossip, index acknowledgements, assignments and fetches.
func (m *LogMaintainer) HandleMessage(from protocol.NodeID, msg protocol.Message) {
	if m.lost != "" {
		return
	}
	switch msg := msg.(type) {
	case *HLGossip:
		if !contains(m.cfg.Peers, from) || msg.Gen < m.gen {
			return // not a peer, or progress a truncation may have undone
		}
		m.learnJournal(msg.Journal)
		if len(msg.Journal) == len(m.cfg.Journal) && m.next != None && msg.HL >= m.next {
			m.lose(from, msg.HL)
			return
		}
		if msg.Frozen {
			return
		}
		p := progress{next: msg.Next, contig: msg.Contig, epochs: len(msg.Journal)}
		if old, ok := m.peers[from]; !ok || p.epochs > old.epochs || (p.epochs == old.epochs && p.next > old.next) {
			m.peers[from] = p
		}
		m.updateHL()
	case *IndexAck:
		m.unindexed[from] = removeEntries(m.unindexed[from], msg.Entries)
		if c := m.claimed[from]; msg.Epochs > c.epochs || (msg.Epochs == c.epochs && msg.Through > c.through) {
			m.claimed[from] = indexClaim{through: msg.Through, epochs: msg.Epochs}
		}
	case *Assign:
		if !m.cfg.Chariots || !contains(m.cfg.Queues, from) || msg.Gen != m.gen || m.frozen {
			return // another generation's (its queue learns the new one), or frozen
		}
		m.learnJournal(msg.Journal)
		ack := &PersistAck{Gen: m.gen}
		for _, r := range msg.Records {
			if r == nil || r.LId == 0 || m.cfg.Journal.Owner(r.LId) != m.cfg.Self || r.Host < 0 || r.Host >= m.cfg.DCs ||
				r.TOId == 0 || len(r.Deps) != m.cfg.DCs {
				continue // not ours, or malformed: ignored
			}
			ack.LIds = append(ack.LIds, r.LId)
			if m.filled(r.LId) {
				continue // a retransmission
			}
			m.fill(r) // answered once the head of the log passes it (raiseHL)
		}
		m.updateHL()
		ack.HL = m.hl
		m.env.Send(from, ack)
	case *Freeze:
		if m.cfg.Chariots && contains(m.cfg.Queues, from) {
			m.freeze(from, msg)
		}
	case *Truncate:
		if m.cfg.Chariots && contains(m.cfg.Queues, from) {
			m.truncateTo(from, msg)
		}
	case *FetchReq:
		if !m.cfg.Chariots || msg.Limit <= 0 {
			return
		}
		if len(msg.Horizon) > 0 {
			m.horizon = maxVec(m.horizon, msg.Horizon)
		}
		resp := &FetchResp{FromTOId: msg.FromTOId}
		m.disk.hosted(m.cfg.DC, max(msg.FromTOId, m.gcTo[m.cfg.DC]+1), func(r *Record) bool {
			if r.LId > m.hl {
				return false
			}
			resp.Records = append(resp.Records, r)
			return len(resp.Records) < msg.Limit
		})
		m.env.Send(from, resp)
	}
}

// learnJournal adopts j if it extends the maintainer's journal, and recomputes its progress.
func (m *LogMaintainer) learnJournal(j Journal) {
	if len(j) <= len(m.cfg.Journal) || !j.Valid() || !j.Extends(m.cfg.Journal) || !j.Within(m.cfg.Peers) {
		return
	}
	start := j[len(m.cfg.Journal)].StartLId
	m.cfg.Journal = j
	// Positions from start on were never assigned under the old journal: recompute next from
	// the last filled own position below start.
	if m.next == None || m.next >= start {
		m.next = j.NextOwned(m.cfg.Self, min(m.contig, start-1))
		m.advance()
	}
}

// HandleRequest serves appends (standalone), head-of-log queries and reads.
func (m *LogMaintainer) HandleRequest(req protocol.Request) {
	reply := protocol.Reply{Client: req.Client, Seq: req.Seq}
	if m.lost != "" {
		reply.Err = m.lost
		m.env.Reply(reply)
		return
	}
	switch op := req.Op.(type) {
	case *AppendOp:
		if m.cfg.Chariots || op.Record == nil {
			reply.Err = "flstore: append goes to a maintainer only in standalone mode"
			m.env.Reply(reply)
			return
		}
		r := op.Record.Clone()
		r.Client, r.CallSeq, r.Host, r.NoOp, r.Collected = req.Client, req.Seq, m.cfg.DC, false, false
		if r.MinLId >= m.next {
			m.waiting = append(m.waiting, r)
			return
		}
		m.place(r)
		m.placeWaiting()
		m.updateHL()
		return
	case *HLQuery:
		reply.Op = &HLResult{HL: m.hl, Journal: m.cfg.Journal}
	case *ReadOp:
		res := &ReadResult{HL: max(m.hl, op.HL)}
		m.disk.records(max(op.From, 1), min(op.To, res.HL), func(r *Record) bool {
			res.Records = append(res.Records, r)
			return true
		})
		reply.Op = res
	default:
		reply.Err = "flstore: unknown operation"
	}
	m.env.Reply(reply)
}

// place gives r the next free own position (standalone: TOId = LId), persists it and answers.
func (m *LogMaintainer) place(r *Record) {
	r.LId = m.next
	r.TOId = r.LId
	m.fill(r)
	if r.Client != 0 {
		m.env.Reply(protocol.Reply{Client: r.Client, Seq: r.CallSeq, Op: &AppendResult{TOId: r.TOId, LId: r.LId, Via: NoVia}})
	}
}

// placeWaiting places the buffered explicit-order appends whose MinLId is now below next.
func (m *LogMaintainer) placeWaiting() {
	for progress := true; progress; {
		progress = false
		for i, r := range m.waiting {
			if r.MinLId < m.next {
				m.waiting = append(m.waiting[:i], m.waiting[i+1:]...)
				m.place(r)
				progress = true
				break
			}
		}
	}
}

// fill persists r at r.LId on the Disk (in Chariots also under its host and TOId, for senders
// and garbage collection; collected at once if every datacenter is known to hold it), advances
// the progress and queues its tags for indexing.
func (m *LogMaintainer) fill(r *Record) {
	m.count++
	m.above[r.LId] = true
	m.advance()
	if !r.NoOp && len(m.cfg.Indexers) > 0 {
		for _, t := range r.Tags {
			ix := IndexerOf(t.Name, m.cfg.Indexers)
			m.unindexed[ix] = append(m.unindexed[ix], IndexEntry{Tag: t.Name, Value: t.Value, LId: r.LId})
		}
	}
	if !m.cfg.Chariots {
		m.putRecord(r)
		return
	}
	if r.Client != 0 && r.Host == m.cfg.DC {
		a := answer{LId: r.LId, Client: r.Client, CallSeq: r.CallSeq, TOId: r.TOId, Via: r.Via}
		if m.cfg.UnsafeAnswerOnPersist {
			m.env.Reply(protocol.Reply{Client: a.Client, Seq: a.CallSeq, Op: &AppendResult{TOId: a.TOId, LId: a.LId, Via: a.Via}})
		} else {
			i := sort.Search(len(m.unanswered), func(i int) bool { return m.unanswered[i].LId > r.LId })
			m.unanswered = slices.Insert(m.unanswered, i, a)
		}
	}
	if r.Host < len(m.gcTo) && r.TOId <= m.gcTo[r.Host] {
		r = collected(r)
	}
	m.putRecord(r)
	m.disk.index(r)
}

// advance moves next past filled positions.
func (m *LogMaintainer) advance() {
	for m.next != None && m.above[m.next] {
		delete(m.above, m.next)
		m.contig = m.next
		m.next = m.cfg.Journal.NextOwned(m.cfg.Self, m.next)
	}
}

// fillIdle fills the rest of the current range with no-ops when this maintainer lags (spec A6).
func (m *LogMaintainer) fillIdle() {
	if m.cfg.Chariots || m.cfg.NoOpAfterUs <= 0 || m.next == None {
		return
	}
	// It holds the head of the log back if its next free position is the lowest of all and
	// another maintainer has filled a later position.
	blocks := false
	for _, p := range m.peers {
		if p.next < m.next {
			blocks = false
			break
		}
		blocks = blocks || p.contig > m.next
	}
	b := m.cfg.Journal[m.cfg.Journal.epochOf(m.next)].B
	if !blocks {
		m.lagSinceUs = 0
		return
	}
	now := m.env.NowUs()
	if m.lagSinceUs == 0 {
		m.lagSinceUs = now
		return
	}
	if now-m.lagSinceUs < m.cfg.NoOpAfterUs {
		return
	}
	m.lagSinceUs = 0
	ep := m.cfg.Journal[m.cfg.Journal.epochOf(m.next)]
	end := ep.StartLId + ((m.next-ep.StartLId)/b+1)*b - 1 // the end of the current range
	for m.next != None && m.next <= end {
		m.place(&Record{NoOp: true, Host: m.cfg.DC})
	}
	m.placeWaiting()
}

// updateHL recomputes the head of the log under the configured rule; it never decreases.
func (m *LogMaintainer) updateHL() {
	m.raiseHL(m.computeHL())
}

// raiseHL moves the head of the log up to hl (never down). In Chariots mode it then answers the
// clients of this datacenter's records it holds up to hl: a record is acknowledged only once the
// head of the log passed it, so that no token rebuild truncates an acknowledged record.
func (m *LogMaintainer) raiseHL(hl uint64) {
	if hl == None || hl <= m.hl {
		return
	}
	m.hl = hl
	i := 0
	for ; i < len(m.unanswered) && m.unanswered[i].LId <= hl; i++ {
		a := m.unanswered[i]
		m.env.Reply(protocol.Reply{Client: a.Client, Seq: a.CallSeq, Op: &AppendResult{TOId: a.TOId, LId: a.LId, Via: a.Via}})
	}
	m.unanswered = m.unanswered[i:]
}

// computeHL returns the head of the log under the configured rule from this maintainer's
// progress and its peers' (None if no maintainer owns a position).
func (m *LogMaintainer) computeHL() uint64 {
	return head(m.cfg.Journal, m.cfg.Rule, func(j protocol.NodeID) (progress, bool) {
		if j == m.cfg.Self {
			return progress{next: m.next, contig: m.contig, epochs: len(m.cfg.Journal)}, true
		}
		p, ok := m.peers[j]
		return p, ok && p != (progress{})
	})
}

// head returns the head of the log of journal j under rule, from the progress of each of its
// maintainers (of: false if unknown: it filled nothing), None if no maintainer owns a position.
func head(j Journal, rule HLRule, of func(protocol.NodeID) (progress, bool)) uint64 {
	hl := uint64(None)
	for _, n := range j.maintainers() {
		p, ok := of(n)
		if !ok {
			p = progress{next: j.NextOwned(n, 0), epochs: len(j)}
		}
		if p.epochs < len(j) { // computed under an older journal: trust it below the new epochs
			start := j[p.epochs].StartLId
			p.next, p.contig = min(p.next, start), min(p.contig, start-1)
		}
		v := p.contig
		if rule == Exact {
			if p.next == None {
				continue
			}
			v = p.next - 1
		}
		hl = min(hl, v)
	}
	return hl
}

// StablePrefix returns the exact head of the log of journal j (spec A5) from frozen maintainers'
// progress (FreezeAck, by maintainer): every position up to it is filled. A token rebuild
// truncates the log there.
func StablePrefix(j Journal, acks map[protocol.NodeID]*FreezeAck) uint64 {
	return head(j, Exact, func(n protocol.NodeID) (progress, bool) {
		a := acks[n]
		if a == nil {
			return progress{}, false
		}
		return progress{next: a.Next, epochs: len(a.Journal)}, true
	})
}

// collect drops the bodies of records every datacenter holds (spec 4: r may be deleted iff
// every T[j][r.Host] ≥ r.TOId), keeping their names and positions: per host, those between the
// last collection's horizon and the new one (a record that arrives later below it is collected
// as it is filled). With GCKeepLatest only superseded records go (collectSuperseded).
func (m *LogMaintainer) collect() {
	if m.cfg.GCKeepLatest {
		m.collectSuperseded()
		return
	}
	for h := range min(len(m.horizon), len(m.gcTo)) {
		if m.horizon[h] <= m.gcTo[h] {
			continue
		}
		m.disk.hosted(h, m.gcTo[h]+1, func(r *Record) bool {
			if r.TOId > m.horizon[h] {
				return false
			}
			if !r.Collected && !r.NoOp {
				m.putRecord(collected(r))
			}
			return true
		})
		m.gcTo[h] = m.horizon[h]
	}
}

// collected returns a copy of r without its body and tags, marked collected.
func collected(r *Record) *Record {
	c := *r
	c.Collected, c.Body, c.Tags = true, nil, nil
	return &c
}

// IndexerOf returns the indexer of tag name among indexers (by hash of the name, spec 3.5).
func IndexerOf(name string, indexers []protocol.NodeID) protocol.NodeID {
	return indexers[tagHash(name)%uint32(len(indexers))]
}

// tagHash spreads tag names over indexers (FNV-1a).
func tagHash(s string) uint32 {
	h := uint32(2166136261)
	for i := range len(s) {
		h ^= uint32(s[i])
		h *= 16777619
	}
	return h
}

// removeEntries returns es without the entries acked names (a new slice: es may be shared
// with messages in flight).
func removeEntries(es, acked []IndexEntry) []IndexEntry {
	type key struct {
		lid        uint64
		tag, value string
	}
	done := make(map[key]bool, len(acked))
	for _, a := range acked {
		done[key{a.LId, a.Tag, string(a.Value)}] = true
	}
	var out []IndexEntry
	for _, e := range es {
		if !done[key{e.LId, e.Tag, string(e.Value)}] {
			out = append(out, e)
		}
	}
	return out
}

// maxVec returns the element-wise maximum of a and b.
func maxVec(a, b []uint64) []uint64 {
	out := make([]uint64, max(len(a), len(b)))
	for i := range out {
		if i < len(a) {
			out[i] = a[i]
		}
		if i < len(b) {
			out[i] = max(out[i], b[i])
		}
	}
	return out
}

// MaxVec returns the element-wise maximum of a and b (vectors of TOIds).
func MaxVec(a, b []uint64) []uint64 { return maxVec(a, b) }
