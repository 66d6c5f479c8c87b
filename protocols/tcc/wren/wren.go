// Package wren implements Wren (Spirovska, Didona and Zwaenepoel, DSN'18) as the FastCCS thesis
// evaluates it (spec fastccs-tcc.md §3.3, §6.2 W1–W2): transactional causal consistency in one
// datacenter through hybrid logical clocks (HLC) and a stable time, with read-only transactions
// (ROTs) that always take two rounds and never block, and write-only transactions (WOTs) that
// return as soon as their commit time is decided.
//
// Partition state: an HLC; the local stable time, LST (every transaction with commit time
// ct ≤ LST is installed at every partition); committed versions of its keys, each with a scalar
// ct; and the prepared (pending) WOTs. RST, the remote stable time of geo-replicated Wren, is
// fixed at 0: one datacenter only, and the factory refuses more.
//
//   - Stabilization: every stab_interval each partition computes its local stable time, the
//     smallest prepare time among its pending WOTs minus one, or its HLC when none is pending,
//     and LST is the minimum over all partitions. With gossip=all (the default) every partition
//     sends its value to every other and takes the minimum itself; with gossip=tree every
//     partition sends it to partition 0, which takes the minimum and fans LST out (2(N−1)
//     messages per period instead of N(N−1): at 1024 partitions all-to-all is a million
//     messages per period). A partition's LST follows the minimum as soon as it hears a new
//     value, and also absorbs the stable times clients present (lst_c, st). Correctness does
//     not depend on the method (spec §2.7). Since a
//     partition's later prepares get HLC times above every local value it announced, a
//     transaction with ct ≤ LST was prepared at each participant before that participant's
//     announcement and was no longer pending then: it is installed everywhere.
//   - ROT [RESOLUTION W1]: round 1 asks one partition, the ROT's coordinator, for a snapshot
//     st = max(LST, lst_c); round 2 has the client read every involved partition directly at st
//     (the newest version with ct ≤ st), which never blocks because st is stable. The client
//     picks the coordinator uniformly (seeded) among the partitions the ROT reads, afresh for each
//     attempt, so that a restarted ROT does not insist on an unreachable partition. A ROT always
//     reports 2 rounds, a restarted one those of its last attempt.
//   - WOT [RESOLUTION W2], Cure's logic with HLC: the client sends the writes, lst_c and hwt_c
//     to a coordinator (a participant chosen uniformly, seeded); the coordinator sends each
//     participant a prepare; a participant moves its HLC past max(lst_c, hwt_c), takes
//     pt := HLC tick, keeps the writes pending and votes pt; the coordinator picks
//     ct := max(pt), answers the client at once (before the writes are stable: Wren's writes
//     finish early, thesis §4.4.4) and sends the decision to the participants, which install
//     the versions with ct. The client keeps its own committed writes in a write cache until
//     lst_c ≥ ct and answers reads of those keys from it when ct > st (read-your-writes).
//   - Version order: by (ct, writer id); ties between concurrent WOTs are broken by id. A
//     partition installs versions in decision order, which may differ, so the replica
//     implements protocol.VersionOrderer, from a record of every version on its Disk
//     (tcc.VersionLog), which its checkpoints leave out.
//
// Faults (spec A8, A17). Messages may be lost, duplicated or reordered. The coordinator, which in
// Wren alone knows every participant of a WOT (the client talks only to it), resends prepares
// to participants that have not voted every retry_interval, and aborts a WOT still undecided
// after tx_timeout (presumed abort: its decision record is the tombstone that answers the
// client's retries and late votes). It resends a decision to every participant that has not
// acknowledged it, every retry_interval, so a prepared version, which holds back its
// partition's local stable time and therefore LST, is always resolved once the network heals;
// participants need not ask (the pull of spec A8 is replaced by this push). A client retries a
// WOT with the same id every tx_timeout, and restarts a ROT that has not finished in tx_timeout.
// Partitions deduplicate by transaction id; what they remember is bounded by a per-session
// floor, the highest transaction sequence number seen from the session: a session runs one
// transaction at a time, so anything below its floor is finished, and records of finished,
// fully acknowledged transactions below it are forgotten while late copies of their messages
// are ignored.
//
// Visibility lag (spec §4.3; tcc.VisibilityReporter): once a driver drains it, a partition
// reports, per WOT it installs, the installation time and when LST first reaches the WOT's ct,
// so that snapshots taken here include it. Installed WOTs wait in a min-heap by ct that each
// raise of LST pops; the coordinator's report adds the decision time and the participant count.
//
// Garbage collection [RESOLUTION G-GC, adapted]: a committed version superseded by a visible
// newer one (ct ≤ LST) for more than tx_timeout is deleted. Instead of trusting clocks for
// safety, a partition remembers its collection floor (the ct of the oldest version kept after
// a deletion) and answers a read at an older snapshot with TooOld and its LST; the client
// adopts that stable time and restarts the ROT. Collection sweeps run every tx_timeout/5.
package wren

import (
	"errors"
	"fmt"
	"slices"

	"github.com/meridian-kv/meridian/protocol"
	"github.com/meridian-kv/meridian/protocol/txn"
	"github.com/meridian-kv/meridian/protocols/registry"
	"github.com/meridian-kv/meridian/protocols/tcc"
)

func init() {
	registry.Register("wren", registry.Entry{
		Family:        registry.Causal,
		Description:   "Wren: HLC commit times, stable-time snapshots, 2-round non-blocking ROTs, client write cache (one datacenter)",
		New:           New,
		Codec:         Codec,
		NewClient:     NewClient,
		MaxReadRounds: 2,
		RandomParams:  randomParams,
	})
}

// Parameter names Wren accepts; the client library accepts the same ones.
const (
	// ParamStabInterval is the LST gossip period (default 5ms, the period FastCCS gossips
	// its svc with, so that the comparison is fair; spec §2.7).
	ParamStabInterval = "stab_interval"
	// ParamGossip is how local stable times travel: "all" (all-to-all, the default) or
	// "tree" (through partition 0, which fans LST out).
	ParamGossip = "gossip"
	// ParamTxTimeout bounds a transaction (default 5s): the coordinator aborts a WOT not
	// prepared everywhere by then, the client retries a WOT and restarts a ROT after it, and
	// versions superseded for longer are collected.
	ParamTxTimeout = "tx_timeout"
	// ParamRetryInterval is how often a coordinator resends unanswered prepares and
	// unacknowledged decisions (default 100ms).
	ParamRetryInterval = "retry_interval"
)

// Gossip modes (ParamGossip).
const (
	GossipAll  = "all"
	GossipTree = "tree"
)

// params are Wren's parsed parameters, shared by replicas and clients.
type params struct {
	stabIntervalUs  int64
	txTimeoutUs     int64
	retryIntervalUs int64
	tree            bool
}

func parseParams(p protocol.Params) (params, error) {
	if err := p.CheckKnown([]string{ParamStabInterval, ParamGossip, ParamTxTimeout, ParamRetryInterval}, nil); err != nil {
		return params{}, fmt.Errorf("wren: %w", err)
	}
	var out params
	var err error
	for _, d := range []struct {
		name  string
		defUs int64
		dst   *int64
	}{
		{ParamStabInterval, 5_000, &out.stabIntervalUs},
		{ParamTxTimeout, 5_000_000, &out.txTimeoutUs},
		{ParamRetryInterval, 100_000, &out.retryIntervalUs},
	} {
		if *d.dst, err = p.Duration(d.name, d.defUs); err != nil {
			return params{}, fmt.Errorf("wren: %w", err)
		}
		if *d.dst <= 0 {
			return params{}, fmt.Errorf("wren: parameter %s must be positive", d.name)
		}
	}
	switch g := p[ParamGossip]; g {
	case "", GossipAll:
	case GossipTree:
		out.tree = true
	default:
		return params{}, fmt.Errorf("wren: parameter %s: %q is neither %q nor %q", ParamGossip, g, GossipAll, GossipTree)
	}
	return out, nil
}

// Timers.
const (
	timerStab protocol.TimerID = iota + 1
	timerRetry
	timerGC
)

// hlc is a hybrid logical clock packed into one int64 of microseconds (Kulkarni et al.): it
// never falls behind the node's physical clock, never goes backwards, and moves past every
// timestamp it observes. A tick within the microsecond of the last one borrows the next
// microsecond, so the clock runs ahead of physical time only while events come faster than
// one per microsecond.
type hlc struct{ lastUs int64 }

// now reads the clock without ticking; later ticks are above the value read.
func (h *hlc) now(physUs int64) int64 {
	h.lastUs = max(h.lastUs, physUs)
	return h.lastUs
}

// tick returns a fresh timestamp above every earlier reading.
func (h *hlc) tick(physUs int64) int64 {
	h.lastUs = max(h.lastUs+1, physUs)
	return h.lastUs
}

// observe moves the clock to at least t.
func (h *hlc) observe(t int64) { h.lastUs = max(h.lastUs, t) }

// version is one committed version of a key.
type version struct {
	tcc.Stamp
	value []byte
	// supersededAtUs is when a sweep first saw a visible newer version (superseded is set).
	supersededAtUs int64
	superseded     bool
}

// prepared is a WOT pending at a participant.
type prepared struct {
	pt     int64
	writes []txn.Write
	coord  int // the coordinator's partition
}

// coordTx is a WOT at its coordinator, kept until it is decided, every participant acknowledged
// the decision and its session moved past it.
type coordTx struct {
	id           txn.ID
	startUs      int64
	clock        int64 // max(lst_c, hwt_c)
	participants []int // sorted partitions
	shares       [][]txn.Write
	votes        []int64 // prepare times, 0 until voted (a prepare time is at least 1)
	acked        []bool
	decided      bool
	committed    bool
	ct           int64
	decidedUs    int64
	waiting      []protocol.Request // client requests (the first and its retries) to answer
}

func (c *coordTx) finished() bool { return c.decided && !slices.Contains(c.acked, false) }

// session is what a partition remembers of one client session.
type session struct {
	floor uint32              // the highest transaction sequence number seen from the session
	coord map[uint32]*coordTx // WOTs this partition coordinates
	done  map[uint32]struct{} // WOTs decided here as a participant
}

// Replica is one Wren partition.
type Replica struct {
	env   protocol.Env
	nodes []protocol.NodeID // the node of each partition
	part  int               // this partition
	prm   params

	clock hlc
	lst   int64
	// known is the latest local stable time heard from each partition (all mode; the aggregator
	// in tree mode), minKnown its minimum.
	known    []int64
	minKnown int64

	versions map[string][]version // committed versions, sorted by stamp
	// order is every version ever committed, collected ones included: the checker's order, on
	// the replica's Disk (outside its checkpoints).
	order       *tcc.VersionLog
	collectable map[string]struct{} // keys with more than one version
	gcFloorCt   int64               // reads at a snapshot below this may miss collected versions

	pending    map[txn.ID]*prepared
	sessions   map[txn.ClientID]*session
	unfinished map[txn.ID]*coordTx // coordinated WOTs not yet finished()

	// Visibility lag (tcc.VisibilityReporter), once a driver asked for it: the WOTs installed
	// here with ct > LST, by ct.
	vis     tcc.VisibilityLog
	visWait tcc.Waiting[tcc.Visibility]
}

// New builds the Wren partition cfg.Self.
func New(cfg protocol.Config, env protocol.Env) (protocol.Replica, error) {
	prm, err := parseParams(cfg.Params)
	if err != nil {
		return nil, err
	}
	if cfg.Topology == nil {
		return nil, errors.New("wren: no topology")
	}
	nodes, err := tcc.SingleDC("wren", "RST is fixed at 0: geo-replicated Wren is not implemented", cfg.Nodes, cfg.Topology.N())
	if err != nil {
		return nil, err
	}
	if int(cfg.Self) < 0 || int(cfg.Self) >= len(cfg.Nodes) {
		return nil, fmt.Errorf("wren: self node %d out of range", cfg.Self)
	}
	return &Replica{env: env, nodes: nodes, part: cfg.Nodes[cfg.Self].Partition, prm: prm,
		known: make([]int64, len(nodes)), versions: map[string][]version{}, order: tcc.NewVersionLog(env),
		collectable: map[string]struct{}{}, pending: map[txn.ID]*prepared{}, sessions: map[txn.ClientID]*session{},
		unfinished: map[txn.ID]*coordTx{}}, nil
}

// LST is the partition's local stable time, for white-box tests.
func (r *Replica) LST() int64 { return r.lst }

// Pending reports how many WOTs are prepared here and undecided, for white-box tests.
func (r *Replica) Pending() int { return len(r.pending) }

// Start arms the stabilization, retry and collection timers.
func (r *Replica) Start() {
	r.env.SetTimer(r.prm.stabIntervalUs, timerStab)
	r.env.SetTimer(r.prm.retryIntervalUs, timerRetry)
	r.env.SetTimer(r.gcIntervalUs(), timerGC)
}

func (r *Replica) gcIntervalUs() int64 { return max(r.prm.txTimeoutUs/5, 1) }

// HandleTimer runs the periodic tasks.
func (r *Replica) HandleTimer(id protocol.TimerID) {
	switch id {
	case timerStab:
		r.stabilize()
		r.env.SetTimer(r.prm.stabIntervalUs, timerStab)
	case timerRetry:
		r.retry()
		r.env.SetTimer(r.prm.retryIntervalUs, timerRetry)
	case timerGC:
		r.collect()
		r.env.SetTimer(r.gcIntervalUs(), timerGC)
	}
}

// send delivers m to partition p; a message to this partition is handled at once.
func (r *Replica) send(p int, m protocol.Message) {
	if p == r.part {
		r.HandleMessage(r.nodes[p], m)
		return
	}
	r.env.Send(r.nodes[p], m)
}

// partitionOf returns the partition of node from, or -1 for a node that is none of ours.
func (r *Replica) partitionOf(from protocol.NodeID) int {
	return slices.Index(r.nodes, from)
}

// see records a transaction id of a session and returns the session: a higher sequence number
// raises the floor and forgets what is no longer needed below it.
func (r *Replica) see(id txn.ID) *session {
	s := r.sessions[id.Client()]
	if s == nil {
		s = &session{coord: map[uint32]*coordTx{}, done: map[uint32]struct{}{}}
		r.sessions[id.Client()] = s
	}
	if seq := id.Seq(); seq > s.floor {
		s.floor = seq
		for q := range s.done {
			if q < seq {
				delete(s.done, q)
			}
		}
		for q, c := range s.coord {
			if q < seq && c.finished() {
				delete(s.coord, q)
			}
		}
	}
	return s
}

// ---------- stabilization ----------

// localStable is the partition's local stable time: below every pending prepare time, else the
// HLC. Every later prepare time is above it.
func (r *Replica) localStable() int64 {
	if len(r.pending) == 0 {
		return r.clock.now(r.env.NowUs())
	}
	minPt := int64(0)
	for _, p := range r.pending {
		if minPt == 0 || p.pt < minPt {
			minPt = p.pt
		}
	}
	return minPt - 1
}

// heard records partition p's local stable time; in all mode (and at the aggregator) LST
// follows the minimum at once. The minimum is recomputed only when its holder moves.
func (r *Replica) heard(p int, local int64) {
	if local <= r.known[p] {
		return
	}
	old := r.known[p]
	r.known[p] = local
	if old == r.minKnown {
		r.minKnown = slices.Min(r.known)
	}
	r.raiseLST(r.minKnown)
}

// stabilize is the periodic step: announce the local stable time, and at the aggregator fan
// LST out.
func (r *Replica) stabilize() {
	local := r.localStable()
	if r.prm.tree && r.part != 0 {
		r.send(0, &Gossip{Local: local})
		return
	}
	r.heard(r.part, local)
	for p := range r.nodes {
		switch {
		case p == r.part:
		case r.prm.tree:
			r.send(p, &StableTime{Lst: r.lst})
		default:
			r.send(p, &Gossip{Local: local})
		}
	}
}

// ---------- requests ----------

// HandleRequest serves the client library's three requests.
func (r *Replica) HandleRequest(req protocol.Request) {
	reply := protocol.Reply{Client: req.Client, Seq: req.Seq}
	if req.Kind != protocol.Operation {
		reply.Err = "wren: only protocol operations are served"
		r.env.Reply(reply)
		return
	}
	switch op := req.Op.(type) {
	case *SnapshotReq:
		r.see(op.Tx)
		r.raiseLST(op.Lst) // lst_c is a stable time
		reply.Op = &SnapshotResp{Tx: op.Tx, St: r.lst}
	case *ReadReq:
		reply.Op, reply.Err = r.read(op)
	case *CommitReq:
		r.commitReq(req, op)
		return
	default:
		reply.Err = fmt.Sprintf("wren: unexpected request %T", req.Op)
	}
	r.env.Reply(reply)
}

// read serves round 2 of a ROT: the newest version with ct ≤ st of each key.
func (r *Replica) read(op *ReadReq) (protocol.Message, string) {
	for _, k := range op.Keys {
		if tcc.PartitionOf(k, len(r.nodes)) != r.part {
			return nil, fmt.Sprintf("wren: key %q is not on partition %d", k, r.part)
		}
	}
	r.see(op.Tx)
	r.raiseLST(op.St) // st is a stable time
	if op.St < r.gcFloorCt {
		return &ReadResp{Tx: op.Tx, TooOld: true, Lst: r.lst}, ""
	}
	resp := &ReadResp{Tx: op.Tx, Items: make([]Item, len(op.Keys))}
	for i, k := range op.Keys {
		resp.Items[i].Key = k
		vs := r.versions[k]
		if j := r.visible(vs, op.St); j >= 0 {
			resp.Items[i].Value, resp.Items[i].Writer = vs[j].value, vs[j].Writer
		}
	}
	return resp, ""
}

// visible returns the index of the newest of vs with ct ≤ st, or -1.
func (r *Replica) visible(vs []version, st int64) int {
	i, _ := slices.BinarySearchFunc(vs, st, func(v version, st int64) int {
		if v.Time <= st {
			return -1
		}
		return 1
	})
	return i - 1
}

// commitReq starts, or answers a retry of, a WOT this partition coordinates.
func (r *Replica) commitReq(req protocol.Request, op *CommitReq) {
	s := r.see(op.Tx)
	seq := op.Tx.Seq()
	if c := s.coord[seq]; c != nil {
		c.waiting = append(c.waiting, req)
		if c.decided {
			r.answer(c)
		}
		return
	}
	byPart := map[int][]txn.Write{}
	for _, w := range op.Writes {
		p := tcc.PartitionOf(w.Key, len(r.nodes))
		if slices.ContainsFunc(byPart[p], func(o txn.Write) bool { return o.Key == w.Key }) {
			byPart = nil // a key written twice: malformed
			break
		}
		byPart[p] = append(byPart[p], w)
	}
	if seq < s.floor || op.Tx == txn.None || len(byPart) == 0 {
		r.env.Reply(protocol.Reply{Client: req.Client, Seq: req.Seq, Err: "wren: stale, empty or malformed write transaction"})
		return
	}
	c := &coordTx{id: op.Tx, startUs: r.env.NowUs(), clock: max(op.Lst, op.Hwt), waiting: []protocol.Request{req}}
	for p := range byPart {
		c.participants = append(c.participants, p)
	}
	slices.Sort(c.participants)
	for _, p := range c.participants {
		c.shares = append(c.shares, byPart[p])
	}
	c.votes, c.acked = make([]int64, len(c.participants)), make([]bool, len(c.participants))
	s.coord[seq], r.unfinished[op.Tx] = c, c
	r.sendPrepares(c)
}

// toParticipants sends msg(i) to each participant i for which it is not nil, this partition
// last (it is handled at once, and may decide the WOT).
func (r *Replica) toParticipants(c *coordTx, msg func(i int) protocol.Message) {
	self := -1
	for i, p := range c.participants {
		if p == r.part {
			self = i
		} else if m := msg(i); m != nil {
			r.send(p, m)
		}
	}
	if self >= 0 {
		if m := msg(self); m != nil {
			r.send(r.part, m)
		}
	}
}

// sendPrepares sends a prepare to every participant that has not voted.
func (r *Replica) sendPrepares(c *coordTx) {
	r.toParticipants(c, func(i int) protocol.Message {
		if c.votes[i] != 0 {
			return nil
		}
		return &Prepare{Tx: c.id, Clock: c.clock, Writes: c.shares[i]}
	})
}

// sendDecision sends the decision to every participant that has not acknowledged it.
func (r *Replica) sendDecision(c *coordTx) {
	r.toParticipants(c, func(i int) protocol.Message {
		if c.acked[i] {
			return nil
		}
		return &Decision{Tx: c.id, Committed: c.committed, Ct: c.ct}
	})
}

// answer replies to every waiting client request with the decision.
func (r *Replica) answer(c *coordTx) {
	for _, req := range c.waiting {
		r.env.Reply(protocol.Reply{Client: req.Client, Seq: req.Seq, Op: &CommitResp{Tx: c.id, Committed: c.committed, Ct: c.ct}})
	}
	c.waiting = nil
}

// decide settles a WOT, answers the client at once and sends the decision to the participants.
func (r *Replica) decide(c *coordTx, committed bool, ct int64) {
	c.decided, c.committed, c.ct, c.decidedUs = true, committed, ct, r.env.NowUs()
	r.answer(c)
	r.sendDecision(c)
}

// retry resends what is unanswered and aborts WOTs undecided after the timeout (presumed
// abort), in transaction id order.
func (r *Replica) retry() {
	now := r.env.NowUs()
	ids := make([]txn.ID, 0, len(r.unfinished))
	for id := range r.unfinished {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	for _, id := range ids {
		c, ok := r.unfinished[id]
		switch {
		case !ok || now-c.startUs < r.prm.retryIntervalUs:
		case c.decided:
			r.sendDecision(c)
		case now-c.startUs >= r.prm.txTimeoutUs:
			r.decide(c, false, 0)
		default:
			r.sendPrepares(c)
		}
	}
}

// ---------- peer messages ----------

// HandleMessage processes a peer message; anything malformed or from a stranger is ignored.
func (r *Replica) HandleMessage(from protocol.NodeID, m protocol.Message) {
	p := r.partitionOf(from)
	if p < 0 {
		return
	}
	switch m := m.(type) {
	case *Prepare:
		r.prepare(p, m)
	case *Vote:
		r.vote(p, m)
	case *Decision:
		r.decision(p, m)
	case *DecisionAck:
		r.ack(p, m)
	case *Gossip:
		if !r.prm.tree || r.part == 0 {
			r.heard(p, m.Local)
		}
	case *StableTime:
		if p == 0 {
			r.raiseLST(m.Lst)
		}
	}
}

// prepare makes this partition a participant: pt := HLC tick past max(lst_c, hwt_c).
func (r *Replica) prepare(coord int, m *Prepare) {
	if pr := r.pending[m.Tx]; pr != nil {
		r.send(pr.coord, &Vote{Tx: m.Tx, Pt: pr.pt})
		return
	}
	s := r.see(m.Tx)
	seq := m.Tx.Seq()
	if _, done := s.done[seq]; done || seq < s.floor || len(m.Writes) == 0 {
		return
	}
	for _, w := range m.Writes {
		if tcc.PartitionOf(w.Key, len(r.nodes)) != r.part {
			return
		}
	}
	r.clock.observe(m.Clock)
	pr := &prepared{pt: r.clock.tick(r.env.NowUs()), writes: m.Writes, coord: coord}
	r.pending[m.Tx] = pr
	r.send(coord, &Vote{Tx: m.Tx, Pt: pr.pt})
}

// vote counts a participant's prepare time; with every vote in, ct := max(pt).
func (r *Replica) vote(p int, m *Vote) {
	c := r.unfinished[m.Tx]
	if c == nil || c.decided || m.Pt <= 0 {
		return
	}
	i := slices.Index(c.participants, p)
	if i < 0 {
		return
	}
	c.votes[i] = m.Pt
	if !slices.Contains(c.votes, 0) {
		r.decide(c, true, slices.Max(c.votes))
	}
}

// decision applies the coordinator's outcome and acknowledges it (also when already applied).
func (r *Replica) decision(coord int, m *Decision) {
	s := r.see(m.Tx)
	seq := m.Tx.Seq()
	if pr := r.pending[m.Tx]; pr != nil {
		if pr.coord != coord {
			return
		}
		delete(r.pending, m.Tx)
		if m.Committed {
			r.clock.observe(m.Ct)
			r.install(m.Tx, m.Ct, pr.writes)
			r.trackVisibility(coord, m.Tx, m.Ct)
		}
	}
	if seq >= s.floor {
		s.done[seq] = struct{}{} // refuses a prepare that arrives after its abort
	}
	r.send(coord, &DecisionAck{Tx: m.Tx})
}

func (r *Replica) ack(p int, m *DecisionAck) {
	c := r.unfinished[m.Tx]
	if c == nil || !c.decided {
		return
	}
	if i := slices.Index(c.participants, p); i >= 0 {
		c.acked[i] = true
	}
	if c.finished() {
		delete(r.unfinished, m.Tx)
		if s := r.sessions[m.Tx.Client()]; m.Tx.Seq() < s.floor {
			delete(s.coord, m.Tx.Seq())
		}
	}
}

// ---------- versions ----------

// install adds tx's committed versions at their place in each key's order.
func (r *Replica) install(tx txn.ID, ct int64, writes []txn.Write) {
	st := tcc.Stamp{Time: ct, Writer: tx}
	for _, w := range writes {
		vs := r.versions[w.Key]
		i, _ := slices.BinarySearchFunc(vs, st, func(v version, s tcc.Stamp) int { return v.Compare(s) })
		r.versions[w.Key] = slices.Insert(vs, i, version{Stamp: st, value: w.Value})
		if len(vs) > 0 {
			r.collectable[w.Key] = struct{}{}
		}
		r.order.Add(w.Key, tx, ct)
	}
}

// collect deletes versions superseded by a visible newer version for more than tx_timeout.
func (r *Replica) collect() {
	now := r.env.NowUs()
	for k := range r.collectable {
		vs := r.versions[k]
		newest := r.visible(vs, r.lst) // versions before it are superseded by a visible one
		drop := 0
		for j := range max(newest, 0) {
			if !vs[j].superseded {
				vs[j].superseded, vs[j].supersededAtUs = true, now
			}
			if drop == j && now-vs[j].supersededAtUs > r.prm.txTimeoutUs {
				drop++
			}
		}
		if drop == 0 {
			continue
		}
		r.gcFloorCt = max(r.gcFloorCt, vs[drop].Time)
		r.versions[k] = slices.Clone(vs[drop:])
		if len(vs)-drop < 2 {
			delete(r.collectable, k)
		}
	}
}

// VersionOrder implements protocol.VersionOrderer: every committed version of each key, by
// (ct, writer id), collected ones included.
func (r *Replica) VersionOrder() map[string][]txn.ID { return r.order.Order() }

// ---------- visibility lag (tcc.VisibilityReporter) ----------

// maxVisWaiting bounds the installed WOTs a partition tracks until LST reaches them. A WOT
// installed while that many wait (LST is stuck behind an unreachable partition, say) is
// counted as dropped instead.
const maxVisWaiting = 1 << 16

// DrainVisibility implements tcc.VisibilityReporter: per WOT committed here, its installation
// (the decision's arrival) and the moment LST ≥ ct, when a snapshot st = max(LST, lst_c) taken
// at this partition first covers it. The first call turns tracking on.
func (r *Replica) DrainVisibility(dst []tcc.Visibility) ([]tcc.Visibility, int) {
	return r.vis.Drain(dst)
}

// trackVisibility starts measuring tx's visibility lag at its installation here with commit
// time ct; coord is its coordinator, which adds the decision time and the participant count.
func (r *Replica) trackVisibility(coord int, tx txn.ID, ct int64) {
	if !r.vis.On() {
		return
	}
	now := r.env.NowUs()
	ev := tcc.Visibility{Tx: tx, CommitUs: now}
	if c := r.unfinished[tx]; coord == r.part && c != nil {
		ev.Participants, ev.DecidedUs = len(c.participants), c.decidedUs
	}
	switch {
	case ct <= r.lst: // cannot happen while LST stays below every pending prepare time
		ev.VisibleUs = now
		r.vis.Record(ev)
	case r.visWait.Len() >= maxVisWaiting:
		r.vis.Drop()
	default:
		r.visWait.Add(ct, ev)
	}
}

// raiseLST moves LST up to at least t (a stable time heard or presented) and records the WOTs
// that became visible.
func (r *Replica) raiseLST(t int64) {
	if t <= r.lst {
		return
	}
	r.lst = t
	r.visWait.Release(t, func(ev tcc.Visibility) {
		ev.VisibleUs = r.env.NowUs()
		r.vis.Record(ev)
	})
}
