// Package twopc implements the "2PC over Paxos" baseline (protocol name "2pc-paxos"): the
// Spanner-inspired single-coordinator commit protocol of spec helios-message-futures.md §5.2,
// whose expected uncontended commit latency at datacenter X is RTT(X,V) + RTT(V, 2nd-closest
// other DC) (§5.6; on aws-helios V 78, O 144, C 156, I 162, S 346) and whose behaviour tests are
// §7.4.
//
// Every datacenter runs one full replica (protocol.FullReplicas). One of them, the coordinator
// (parameter "coordinator", default V when the topology has it, else its first datacenter),
// keeps the only lock table and leads a Multi-Paxos log whose acceptors and learners are all
// replicas. Clients talk only to their local replica, which forwards:
//
//   - Get (carrying protocol.Request.TxnID) goes to the coordinator, which takes a shared lock
//     for the transaction and answers the key's value and version. A conflicting request waits
//     in the key's FIFO queue. Every time a request waits, the coordinator searches the
//     wait-for graph from the requester, and a requester that closes a cycle is aborted at once
//     (GAP-B2). A Get whose transaction is aborted is answered with Reply.Err (naming the
//     reason); the replica remembers the abort and answers that transaction's Commit with
//     Aborted at once.
//   - Commit goes to the coordinator with the reads and writes. It checks that the transaction
//     still holds its read locks (and that the versions read are still the latest), takes
//     exclusive locks on the written keys one at a time (waiting, with the same deadlock
//     detection), decides commit and appends the transaction to the log. Every commit decision,
//     read-only ones included, is logged, so the uncontended latency is the model's.
//   - The log is led by the coordinator under a lease that never expires (there is no fail-over:
//     while the coordinator's datacenter is down everything waits, and resumes when it returns),
//     so only phase 2 runs: Accept to every replica, chosen once a majority (the coordinator
//     included) acknowledged. Then the coordinator applies the writes, releases the locks,
//     replies through the client's replica, and sends the new chosen index to the learners
//     asynchronously. Every replica applies the chosen entries in log order, so all install
//     identical version orders. Acknowledgements are cumulative (an acceptor acknowledges the
//     longest gap-free prefix it holds), and on every retransmission tick the coordinator
//     resends each lagging replica the suffix it has not acknowledged, so learners fill gaps in
//     log order.
//
// Losses between a replica and the coordinator are covered by a timeout at the client's replica
// (parameter "timeout", default 1s). A Get that times out is answered with Reply.Err, its
// transaction is marked aborted (reason "timeout") and the replica tells the coordinator to
// abort it, repeating until the coordinator answers. A Commit that times out cannot be decided
// locally (the coordinator may have committed it), so the replica asks the coordinator to abort
// it unless already decided, repeating until it answers, and relays the coordinator's answer.
// The coordinator keeps the outcome of every transaction it has seen for gc_after (parameter,
// default 10s) after deciding it, so that late, duplicated or reordered requests are answered
// consistently and never take locks again. Forgetting a transaction raises its client's
// watermark to the transaction's sequence number, and a request about an untracked transaction
// at or below the watermark is refused: a Get is answered aborted ("forgotten"), a Commit or an
// AbortReq with an Outcome of unknown status, which the client's replica relays as an error
// (outcome unknown). Refusing never breaks safety, and a client runs one transaction at a time
// (client.Session), so only requests about finished transactions are refused. The coordinator
// also drops the log prefix that every replica has applied. Memory is therefore bounded by the
// transactions of the last gc_after, one watermark per client and the log suffix some replica
// still lacks. Safety depends on no message being delivered; only liveness waits for the faults
// to end.
package twopc

import (
	"fmt"
	"maps"
	"slices"

	"github.com/meridian-kv/meridian/protocol"
	"github.com/meridian-kv/meridian/registry"
	"github.com/meridian-kv/meridian/txn"
)

func init() {
	registry.Register("2pc-paxos", registry.Entry{
		Description: "2PC over Paxos (Spanner-inspired): locks and a phase-2 Multi-Paxos log at one coordinator (default V)",
		New:         New,
		Codec:       Codec,
	})
}

// Parameter names 2pc-paxos accepts.
const (
	ParamCoordinator = "coordinator" // datacenter name of the coordinator (default V, else the first)
	ParamTimeout     = "timeout"     // forwarded-request timeout at the client's replica (default 1s)
	ParamGCAfter     = "gc_after"    // how long the coordinator keeps a finished transaction (default 10s)
)

// Abort reasons this protocol adds to txn's.
const (
	// ReasonDeadlock: the transaction's lock request closed a cycle in the wait-for graph.
	ReasonDeadlock txn.AbortReason = "deadlock"
	// ReasonTimeout: a forwarded request went unanswered for the timeout.
	ReasonTimeout txn.AbortReason = "timeout"
	// ReasonLockLost: at commit, the transaction did not hold a lock on a key it read.
	ReasonLockLost txn.AbortReason = "lock-lost"
	// ReasonForgotten: a Get of a transaction the coordinator has finished and forgotten, or
	// of a client that has moved on to a later transaction.
	ReasonForgotten txn.AbortReason = "forgotten"
)

const timerTick protocol.TimerID = 1

const (
	tickUs       = 10_000 // retransmission and timeout check period
	batchEntries = 128    // most log entries per retransmitted Accept
)

// Replica is one 2pc-paxos replica: the forwarding proxy for its local clients, an acceptor and
// learner of the log, and, at the coordinator's datacenter, the coordinator.
type Replica struct {
	env       protocol.Env
	nodeOf    []protocol.NodeID
	dcOf      map[protocol.NodeID]int
	self, n   int
	coord     int
	timeoutUs int64
	resendUs  int64 // how often an unanswered AbortReq is repeated
	gcAfterUs int64

	// Proxy state.
	nextRid uint64
	reads   map[uint64]*pendingRead
	commits map[txn.ID]*pendingCommit
	doomed  map[txn.ID]txn.AbortReason // aborted transactions whose Commit has not come yet
	orphans map[txn.ID]int64           // aborts the coordinator has not confirmed: next send time

	// Acceptor and learner state (replicas other than the coordinator).
	entries map[uint64]*txn.Txn // received entries above applied
	have    uint64              // every entry up to have is held
	known   uint64              // the log is chosen up to known
	applied uint64

	co     *coordinator
	selfQ  []protocol.Message // messages to this replica, delivered after the current one
	inLoop bool
}

type pendingRead struct {
	client   txn.ClientID
	seq      uint64
	txn      txn.ID
	deadline int64
}

type pendingCommit struct {
	client   txn.ClientID
	seq      uint64
	deadline int64 // when to (re)send an AbortReq
}

// New builds a 2pc-paxos replica. It needs exactly one replica per datacenter and accepts the
// parameters "coordinator", "timeout" and "gc_after".
func New(pc protocol.Config, env protocol.Env) (protocol.Replica, error) {
	nodeOf, self, err := protocol.FullReplicas(pc)
	if err != nil {
		return nil, err
	}
	p := pc.Params
	if err := p.CheckKnown([]string{ParamCoordinator, ParamTimeout, ParamGCAfter}, nil); err != nil {
		return nil, fmt.Errorf("2pc-paxos: %w", err)
	}
	topo := pc.Topology
	coord := 0
	if _, ok := topo.Index("V"); ok {
		coord, _ = topo.Index("V")
	}
	if name, ok := p[ParamCoordinator]; ok {
		i, found := topo.Index(name)
		if !found {
			return nil, fmt.Errorf("2pc-paxos: parameter %s: topology %s has no datacenter %q", ParamCoordinator, topo.Name, name)
		}
		coord = i
	}
	timeoutUs, err := p.Duration(ParamTimeout, 1_000_000)
	if err != nil {
		return nil, fmt.Errorf("2pc-paxos: %w", err)
	}
	gcAfterUs, err := p.Duration(ParamGCAfter, 10_000_000)
	if err != nil {
		return nil, fmt.Errorf("2pc-paxos: %w", err)
	}
	if timeoutUs <= 0 || gcAfterUs <= 0 {
		return nil, fmt.Errorf("2pc-paxos: parameters %s and %s must be positive", ParamTimeout, ParamGCAfter)
	}
	r := &Replica{
		env: env, nodeOf: nodeOf, dcOf: map[protocol.NodeID]int{}, self: self, n: len(nodeOf), coord: coord,
		timeoutUs: timeoutUs,
		gcAfterUs: gcAfterUs,
		resendUs:  int64(topo.RTTMs[self][coord]*2000) + 50_000,
		reads:     map[uint64]*pendingRead{},
		commits:   map[txn.ID]*pendingCommit{},
		doomed:    map[txn.ID]txn.AbortReason{},
		orphans:   map[txn.ID]int64{},
		entries:   map[uint64]*txn.Txn{},
	}
	for dc, nd := range nodeOf {
		r.dcOf[nd] = dc
	}
	if self == coord {
		r.co = newCoordinator(r, topo.RTTMs)
	}
	return r, nil
}

// Start arms the periodic tick.
func (r *Replica) Start() { r.env.SetTimer(tickUs, timerTick) }

// HandleTimer runs the periodic tick: request timeouts and abort retransmissions at the proxy,
// Accept retransmissions at the coordinator.
func (r *Replica) HandleTimer(id protocol.TimerID) {
	if id != timerTick {
		return
	}
	r.env.SetTimer(tickUs, timerTick)
	r.proxyTick()
	if r.co != nil {
		r.co.tick()
	}
	r.drain()
}

// HandleRequest forwards Gets and Commits to the coordinator and serves ReadSnapshot locally
// (the opt-in per-datacenter snapshot, not serializable across datacenters).
func (r *Replica) HandleRequest(req protocol.Request) {
	defer r.drain()
	reply := func(rep protocol.Reply) {
		rep.Client, rep.Seq = req.Client, req.Seq
		r.env.Reply(rep)
	}
	switch req.Kind {
	case protocol.ReadSnapshot:
		protocol.ServeLocalRead(r.env, req)
	case protocol.Get:
		if req.Key == "" || req.TxnID == txn.None {
			reply(protocol.Reply{Err: "2pc-paxos: Get needs a key and a transaction id"})
			return
		}
		if reason, ok := r.doomed[req.TxnID]; ok {
			reply(protocol.Reply{Err: abortedErr(req.TxnID, reason)})
			return
		}
		r.nextRid++
		r.reads[r.nextRid] = &pendingRead{client: req.Client, seq: req.Seq, txn: req.TxnID, deadline: r.env.NowUs() + r.timeoutUs}
		r.send(r.coord, &ReadReq{From: r.self, Txn: req.TxnID, Key: req.Key, Rid: r.nextRid})
	case protocol.Commit:
		if msg := protocol.ValidateCommit(req); msg != "" {
			reply(protocol.Reply{Err: "2pc-paxos: " + msg})
			return
		}
		id := req.Txn.ID
		if reason, ok := r.doomed[id]; ok {
			delete(r.doomed, id)
			reply(protocol.Reply{Status: txn.Aborted, Reason: reason})
			return
		}
		r.commits[id] = &pendingCommit{client: req.Client, seq: req.Seq, deadline: r.env.NowUs() + r.timeoutUs}
		r.send(r.coord, &CommitReq{From: r.self, Txn: req.Txn})
	default:
		reply(protocol.Reply{Err: fmt.Sprintf("2pc-paxos: unknown request kind %d", req.Kind)})
	}
}

func abortedErr(id txn.ID, reason txn.AbortReason) string {
	return fmt.Sprintf("2pc-paxos: transaction %s aborted: %s", id, reason)
}

// HandleMessage dispatches a peer's message after checking that it comes from where it may.
func (r *Replica) HandleMessage(from protocol.NodeID, m protocol.Message) {
	dc, ok := r.dcOf[from]
	if !ok {
		return
	}
	r.dispatch(dc, m)
	r.drain()
}

// send delivers m to datacenter dc's replica; to this replica itself, after the current handler
// step (see drain).
func (r *Replica) send(dc int, m protocol.Message) {
	if dc == r.self {
		r.selfQ = append(r.selfQ, m)
		return
	}
	r.env.Send(r.nodeOf[dc], m)
}

// drain processes messages to self and the coordinator's lock grants until none is left, so no
// handler ever runs inside another.
func (r *Replica) drain() {
	if r.inLoop {
		return
	}
	r.inLoop = true
	defer func() { r.inLoop = false }()
	for {
		switch {
		case len(r.selfQ) > 0:
			m := r.selfQ[0]
			r.selfQ = r.selfQ[1:]
			r.dispatch(r.self, m)
		case r.co != nil && len(r.co.ready) > 0:
			g := r.co.ready[0]
			r.co.ready = r.co.ready[1:]
			r.co.onGranted(g)
		default:
			return
		}
	}
}

// dispatch handles one message from datacenter dc; malformed or misdirected ones are ignored.
func (r *Replica) dispatch(dc int, m protocol.Message) {
	fromCoord := dc == r.coord
	switch m := m.(type) {
	case *ReadReq:
		if r.co != nil && m.From == dc && m.Txn != txn.None && m.Key != "" {
			r.co.onRead(m)
		}
	case *CommitReq:
		if r.co != nil && m.From == dc && m.Txn != nil && m.Txn.ID != txn.None {
			r.co.onCommit(m)
		}
	case *AbortReq:
		if r.co != nil && m.From == dc && m.Txn != txn.None {
			r.co.onAbort(m)
		}
	case *Ack:
		if r.co != nil && m.From == dc && dc != r.self {
			r.co.onAck(m)
		}
	case *ReadResp:
		if fromCoord {
			r.onReadResp(m)
		}
	case *Outcome:
		if fromCoord {
			r.onOutcome(m)
		}
	case *Accept:
		if fromCoord && r.co == nil {
			r.onAccept(m)
		}
	}
}

// onReadResp answers the Get that the response belongs to, if it is still waiting.
func (r *Replica) onReadResp(m *ReadResp) {
	p, ok := r.reads[m.Rid]
	if !ok || p.txn != m.Txn {
		return
	}
	delete(r.reads, m.Rid)
	rep := protocol.Reply{Client: p.client, Seq: p.seq, Value: m.Value, Version: m.Version}
	if m.Aborted {
		r.doomed[m.Txn] = m.Reason
		rep = protocol.Reply{Client: p.client, Seq: p.seq, Err: abortedErr(m.Txn, m.Reason)}
	}
	r.env.Reply(rep)
}

// onOutcome relays the coordinator's decision to the waiting client, if any, and stops
// repeating an abort request. An outcome the coordinator no longer knows is relayed as an error.
func (r *Replica) onOutcome(m *Outcome) {
	delete(r.orphans, m.Txn)
	p, ok := r.commits[m.Txn]
	if !ok {
		return
	}
	delete(r.commits, m.Txn)
	if m.Status != txn.Committed && m.Status != txn.Aborted {
		r.env.Reply(protocol.Reply{Client: p.client, Seq: p.seq, Err: fmt.Sprintf("2pc-paxos: the coordinator no longer knows the outcome of %s", m.Txn)})
		return
	}
	r.env.Reply(protocol.Reply{Client: p.client, Seq: p.seq, Status: m.Status, Reason: m.Reason})
}

// proxyTick times out forwarded requests and repeats unconfirmed abort requests.
func (r *Replica) proxyTick() {
	now := r.env.NowUs()
	for _, rid := range slices.Sorted(maps.Keys(r.reads)) {
		p := r.reads[rid]
		if now < p.deadline {
			continue
		}
		delete(r.reads, rid)
		if _, ok := r.doomed[p.txn]; !ok {
			r.doomed[p.txn] = ReasonTimeout
			r.orphans[p.txn] = now
		}
		r.env.Reply(protocol.Reply{Client: p.client, Seq: p.seq, Err: abortedErr(p.txn, ReasonTimeout)})
	}
	for _, id := range slices.Sorted(maps.Keys(r.commits)) {
		if p := r.commits[id]; now >= p.deadline {
			p.deadline = now + r.resendUs
			r.send(r.coord, &AbortReq{From: r.self, Txn: id})
		}
	}
	for _, id := range slices.Sorted(maps.Keys(r.orphans)) {
		if now >= r.orphans[id] {
			r.orphans[id] = now + r.resendUs
			r.send(r.coord, &AbortReq{From: r.self, Txn: id})
		}
	}
}

// onAccept stores the coordinator's entries, applies what is chosen in log order, and
// acknowledges the gap-free prefix it holds.
func (r *Replica) onAccept(m *Accept) {
	for _, e := range m.Entries {
		if e.Index > r.have && e.Index <= r.have+1<<20 && e.Txn != nil {
			if _, dup := r.entries[e.Index]; !dup {
				r.entries[e.Index] = e.Txn
			}
		}
	}
	for r.entries[r.have+1] != nil {
		r.have++
	}
	r.known = max(r.known, m.Commit)
	for r.applied < min(r.known, r.have) {
		r.applied++
		t := r.entries[r.applied]
		delete(r.entries, r.applied)
		if len(t.Writes) > 0 {
			r.env.Store().Apply(t.ID, t.Writes)
		}
	}
	r.send(r.coord, &Ack{From: r.self, Match: r.have, Commit: r.applied})
}

// txnState is where a transaction stands at the coordinator.
type txnState uint8

const (
	active     txnState = iota // reading under shared locks
	committing                 // commit requested: acquiring exclusive locks
	deciding                   // commit decided and in the log, waiting for a majority
	committed                  // chosen and applied at the coordinator; locks released
	aborted                    // aborted; locks released
)

// tctx is the coordinator's record of one transaction. Finished ones are kept (without their
// locks and data) so that late or duplicated requests are answered consistently.
type tctx struct {
	id       txn.ID
	from     int // datacenter of the replica forwarding its requests
	st       txnState
	reason   txn.AbortReason
	t        *txn.Txn          // the commit request
	next     int               // exclusive locks of t.Writes acquired so far
	held     map[string]bool   // locked keys: exclusive?
	waiting  []string          // keys whose queue holds a request of this transaction
	readRids map[string]uint64 // Gets waiting for a shared lock: key → request number
	notify   []int             // further datacenters to tell the outcome
}

type lockReq struct {
	id   txn.ID
	excl bool
}

// lock is one key's lock: its holders (shared or one exclusive) and a FIFO queue of waiters in
// which upgrades (a shared holder asking for exclusive) go ahead of other requests.
type lock struct {
	holders map[txn.ID]bool // holder → exclusive?
	queue   []lockReq
}

type grant struct {
	id  txn.ID
	key string
}

// record is a finished transaction the coordinator may forget from atUs on.
type record struct {
	id   txn.ID
	atUs int64
}

type logEntry struct {
	e        Entry
	sentUs   int64 // first broadcast
	chosenUs int64
}

// coordinator is the lock table and the Multi-Paxos leader.
type coordinator struct {
	r          *Replica
	txns       map[txn.ID]*tctx
	locks      map[string]*lock
	ready      []grant // granted lock requests not yet acted on
	finished   []record
	forgot     map[txn.ClientID]uint32 // per client: highest sequence number forgotten
	log        []logEntry              // the entries after base
	base       uint64                  // entries every replica has applied, dropped from log
	commit     uint64                  // chosen (and, at the coordinator, applied) prefix
	match      []uint64                // per datacenter: acknowledged gap-free prefix
	peerCommit []uint64                // per datacenter: prefix it has applied
	nextSend   []int64                 // per datacenter: earliest next retransmission
	rtoUs      []int64
}

func newCoordinator(r *Replica, rttMs [][]float64) *coordinator {
	c := &coordinator{r: r, txns: map[txn.ID]*tctx{}, locks: map[string]*lock{}, forgot: map[txn.ClientID]uint32{},
		match: make([]uint64, r.n), peerCommit: make([]uint64, r.n), nextSend: make([]int64, r.n), rtoUs: make([]int64, r.n)}
	for dc := range r.n {
		c.rtoUs[dc] = int64(rttMs[r.self][dc]*2000) + 20_000
	}
	return c
}

func (c *coordinator) ctx(id txn.ID, from int) *tctx {
	t, ok := c.txns[id]
	if !ok {
		t = &tctx{id: id, from: from, held: map[string]bool{}, readRids: map[string]uint64{}}
		c.txns[id] = t
	}
	return t
}

func (c *coordinator) isFinished(t *tctx) bool { return t.st == committed || t.st == aborted }

// forgotten reports whether id is untracked and at or below its client's watermark.
func (c *coordinator) forgotten(id txn.ID) bool {
	if _, ok := c.txns[id]; ok {
		return false
	}
	w, ok := c.forgot[id.Client()]
	return ok && id.Seq() <= w
}

// finish schedules t's record to be forgotten gc_after from now.
func (c *coordinator) finish(t *tctx) {
	c.finished = append(c.finished, record{id: t.id, atUs: c.r.env.NowUs() + c.r.gcAfterUs})
}

// collect forgets the transactions finished more than gc_after ago and drops the log prefix
// every replica has applied.
func (c *coordinator) collect() {
	now := c.r.env.NowUs()
	for len(c.finished) > 0 && now >= c.finished[0].atUs {
		id := c.finished[0].id
		c.finished = c.finished[1:]
		delete(c.txns, id)
		if cl := id.Client(); id.Seq() > c.forgot[cl] {
			c.forgot[cl] = id.Seq()
		}
	}
	if applied := slices.Min(c.peerCommit); applied > c.base {
		c.log = slices.Delete(c.log, 0, int(applied-c.base))
		c.base = applied
	}
}

// onRead takes a shared lock for a Get and answers it once granted.
func (c *coordinator) onRead(m *ReadReq) {
	if c.forgotten(m.Txn) {
		c.r.send(m.From, &ReadResp{Rid: m.Rid, Txn: m.Txn, Aborted: true, Reason: ReasonForgotten})
		return
	}
	t, ok := c.txns[m.Txn]
	switch {
	case ok && t.st == aborted:
		c.r.send(m.From, &ReadResp{Rid: m.Rid, Txn: m.Txn, Aborted: true, Reason: t.reason})
		return
	case ok && t.st != active:
		return // a stale copy from before the commit request: nobody waits for it
	}
	t = c.ctx(m.Txn, m.From)
	if _, held := t.held[m.Key]; held {
		c.sendRead(t, m.Key, m.Rid)
		return
	}
	t.readRids[m.Key] = m.Rid
	if slices.Contains(t.waiting, m.Key) {
		return
	}
	if c.acquire(t, m.Key, false) == granted {
		delete(t.readRids, m.Key)
		c.sendRead(t, m.Key, m.Rid)
	}
}

func (c *coordinator) sendRead(t *tctx, key string, rid uint64) {
	v := c.r.env.Store().Get(key)
	c.r.send(t.from, &ReadResp{Rid: rid, Txn: t.id, Value: v.Value, Version: v.Writer})
}

// onCommit starts the commit of a transaction: check its read locks, then take its write locks.
func (c *coordinator) onCommit(m *CommitReq) {
	if c.forgotten(m.Txn.ID) {
		c.r.send(m.From, &Outcome{Txn: m.Txn.ID, Status: txn.Unknown})
		return
	}
	t, ok := c.txns[m.Txn.ID]
	if ok {
		switch t.st {
		case aborted, committed:
			c.sendOutcome(t, m.From)
			return
		case deciding:
			c.addNotify(t, m.From)
			return
		case committing:
			return // duplicate
		}
	}
	t = c.ctx(m.Txn.ID, m.From)
	t.t = m.Txn
	c.addNotify(t, m.From)
	if len(t.waiting) > 0 {
		c.abort(t, ReasonLockLost)
		return
	}
	st := c.r.env.Store()
	for _, rd := range m.Txn.Reads {
		if _, held := t.held[rd.Key]; !held {
			c.abort(t, ReasonLockLost)
			return
		}
		if st.Get(rd.Key).Writer != rd.Version {
			c.abort(t, txn.ReasonStaleRead)
			return
		}
	}
	t.st = committing
	c.advance(t)
}

// onAbort aborts a transaction unless its commit is already decided, and answers with the
// outcome (once known). An unknown transaction is recorded as aborted, unless forgotten.
func (c *coordinator) onAbort(m *AbortReq) {
	if c.forgotten(m.Txn) {
		c.r.send(m.From, &Outcome{Txn: m.Txn, Status: txn.Unknown})
		return
	}
	t := c.ctx(m.Txn, m.From)
	c.addNotify(t, m.From)
	switch t.st {
	case active, committing:
		c.abort(t, ReasonTimeout)
	case aborted, committed:
		c.sendOutcome(t, m.From)
	}
}

func (c *coordinator) addNotify(t *tctx, dc int) {
	if !slices.Contains(t.notify, dc) {
		t.notify = append(t.notify, dc)
	}
}

func (c *coordinator) sendOutcome(t *tctx, dc int) {
	status := txn.Committed
	if t.st == aborted {
		status = txn.Aborted
	}
	c.r.send(dc, &Outcome{Txn: t.id, Status: status, Reason: t.reason})
}

type acquired uint8

const (
	granted acquired = iota
	waits
	deadlocked
)

// acquire requests key for t, shared or exclusive. If the request must wait, it is queued and
// the wait-for graph searched from t: if t closes a cycle it is aborted at once (GAP-B2).
func (c *coordinator) acquire(t *tctx, key string, excl bool) acquired {
	l := c.locks[key]
	if l == nil {
		l = &lock{holders: map[txn.ID]bool{}}
		c.locks[key] = l
	}
	cur, holds := l.holders[t.id]
	if holds && (cur || !excl) {
		return granted
	}
	if compatible(l, t.id, excl) && (holds || len(l.queue) == 0) {
		l.holders[t.id] = excl || cur
		t.held[key] = excl || cur
		return granted
	}
	req := lockReq{id: t.id, excl: excl}
	if holds { // an upgrade goes ahead of every waiter that is not an upgrade
		i := 0
		for i < len(l.queue) {
			if _, h := l.holders[l.queue[i].id]; !h {
				break
			}
			i++
		}
		l.queue = slices.Insert(l.queue, i, req)
	} else {
		l.queue = append(l.queue, req)
	}
	t.waiting = append(t.waiting, key)
	if c.closesCycle(t.id) {
		c.abort(t, ReasonDeadlock)
		return deadlocked
	}
	return waits
}

// compatible reports whether id may hold l in the given mode alongside its other holders.
func compatible(l *lock, id txn.ID, excl bool) bool {
	for h, hx := range l.holders {
		if h != id && (excl || hx) {
			return false
		}
	}
	return true
}

// waitsFor calls f for every transaction id waits for: incompatible holders of, and
// incompatible requests queued ahead of it for, each key it waits on.
func (c *coordinator) waitsFor(id txn.ID, f func(txn.ID)) {
	t := c.txns[id]
	if t == nil {
		return
	}
	for _, key := range t.waiting {
		l := c.locks[key]
		if l == nil {
			continue
		}
		pos := slices.IndexFunc(l.queue, func(q lockReq) bool { return q.id == id })
		if pos < 0 {
			continue
		}
		excl := l.queue[pos].excl
		for h, hx := range l.holders {
			if h != id && (excl || hx) {
				f(h)
			}
		}
		for _, q := range l.queue[:pos] {
			if q.id != id && (excl || q.excl) {
				f(q.id)
			}
		}
	}
}

// closesCycle reports whether start reaches itself in the wait-for graph. New edges only ever
// leave or enter the transaction that just started waiting, so checking from it on every wait
// keeps the graph acyclic.
func (c *coordinator) closesCycle(start txn.ID) bool {
	seen := map[txn.ID]bool{}
	stack := []txn.ID{start}
	found := false
	for len(stack) > 0 && !found {
		x := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		c.waitsFor(x, func(y txn.ID) {
			if y == start {
				found = true
			} else if !seen[y] {
				seen[y] = true
				stack = append(stack, y)
			}
		})
	}
	return found
}

// release drops all of t's locks and queued requests and grants what that unblocks.
func (c *coordinator) release(t *tctx) {
	affected := slices.Sorted(maps.Keys(t.held))
	for _, key := range affected {
		if l := c.locks[key]; l != nil {
			delete(l.holders, t.id)
		}
	}
	for _, key := range t.waiting {
		if l := c.locks[key]; l != nil {
			l.queue = slices.DeleteFunc(l.queue, func(q lockReq) bool { return q.id == t.id })
		}
		affected = append(affected, key)
	}
	t.held, t.waiting, t.readRids = nil, nil, nil
	slices.Sort(affected)
	for _, key := range slices.Compact(affected) {
		c.grantWaiters(key)
	}
}

// grantWaiters grants key's queued requests in FIFO order while they are compatible.
func (c *coordinator) grantWaiters(key string) {
	l := c.locks[key]
	if l == nil {
		return
	}
	for len(l.queue) > 0 {
		q := l.queue[0]
		if !compatible(l, q.id, q.excl) {
			break
		}
		l.queue = l.queue[1:]
		mode := q.excl || l.holders[q.id]
		l.holders[q.id] = mode
		if t := c.txns[q.id]; t != nil && t.held != nil {
			t.held[key] = mode
			t.waiting = slices.DeleteFunc(t.waiting, func(k string) bool { return k == key })
		}
		c.ready = append(c.ready, grant{id: q.id, key: key})
	}
	if len(l.holders) == 0 && len(l.queue) == 0 {
		delete(c.locks, key)
	}
}

// onGranted continues whatever waited for a lock: a Get is answered, a commit takes its next
// lock.
func (c *coordinator) onGranted(g grant) {
	t := c.txns[g.id]
	if t == nil || c.isFinished(t) {
		return
	}
	if rid, ok := t.readRids[g.key]; ok {
		delete(t.readRids, g.key)
		c.sendRead(t, g.key, rid)
	}
	if t.st == committing {
		c.advance(t)
	}
}

// abort aborts t (never once its commit is decided), releases its locks and tells whoever waits.
func (c *coordinator) abort(t *tctx, reason txn.AbortReason) {
	if t.st != active && t.st != committing {
		return
	}
	rids := t.readRids
	t.st, t.reason = aborted, reason
	c.release(t)
	t.t = nil
	c.finish(t)
	for _, key := range slices.Sorted(maps.Keys(rids)) {
		c.r.send(t.from, &ReadResp{Rid: rids[key], Txn: t.id, Aborted: true, Reason: reason})
	}
	for _, dc := range t.notify {
		c.sendOutcome(t, dc)
	}
}

// advance takes t's exclusive locks one at a time and decides commit once it holds them all.
func (c *coordinator) advance(t *tctx) {
	for t.next < len(t.t.Writes) {
		if c.acquire(t, t.t.Writes[t.next].Key, true) != granted {
			return
		}
		t.next++
	}
	c.decide(t)
}

// decide appends t's commit to the log and sends it to every acceptor (phase 2).
func (c *coordinator) decide(t *tctx) {
	t.st = deciding
	now := c.r.env.NowUs()
	e := Entry{Index: c.base + uint64(len(c.log)) + 1, Txn: &txn.Txn{ID: t.id, Writes: t.t.Writes}}
	c.log = append(c.log, logEntry{e: e, sentUs: now})
	for dc := range c.r.n {
		if dc != c.r.self {
			c.r.send(dc, &Accept{Entries: []Entry{e}, Commit: c.commit})
		}
	}
	c.advanceCommit()
}

// onAck records an acceptor's progress.
func (c *coordinator) onAck(m *Ack) {
	if m.Match > c.base+uint64(len(c.log)) || m.Commit > c.commit {
		return // malformed: acknowledges what was never sent
	}
	c.match[m.From] = max(c.match[m.From], m.Match)
	c.peerCommit[m.From] = max(c.peerCommit[m.From], m.Commit)
	c.advanceCommit()
}

// advanceCommit moves the chosen prefix to the largest index a majority (the coordinator
// included) holds, and applies the newly chosen entries in order: install the writes, release
// the locks, answer the client's replica. The learners hear of it asynchronously.
func (c *coordinator) advanceCommit() {
	c.match[c.r.self] = c.base + uint64(len(c.log))
	sorted := slices.Clone(c.match)
	slices.Sort(sorted)
	chosen := sorted[len(sorted)-(c.r.n/2+1)] // held by a majority
	if chosen <= c.commit {
		return
	}
	now := c.r.env.NowUs()
	for c.commit < chosen {
		c.commit++
		le := &c.log[c.commit-1-c.base]
		le.chosenUs = now
		if w := le.e.Txn.Writes; len(w) > 0 {
			c.r.env.Store().Apply(le.e.Txn.ID, w)
		}
		t := c.txns[le.e.Txn.ID]
		t.st = committed
		c.release(t)
		t.t = nil
		c.finish(t)
		for _, dc := range t.notify {
			c.sendOutcome(t, dc)
		}
	}
	c.peerCommit[c.r.self] = c.commit
	for dc := range c.r.n {
		if dc != c.r.self {
			c.r.send(dc, &Accept{Commit: c.commit})
		}
	}
}

// tick collects garbage, then resends each lagging acceptor the log suffix it has not
// acknowledged (and the chosen index), at most once per retransmission timeout.
func (c *coordinator) tick() {
	c.collect()
	now := c.r.env.NowUs()
	last := c.base + uint64(len(c.log))
	for dc := range c.r.n {
		if dc == c.r.self || now < c.nextSend[dc] {
			continue
		}
		m, p := c.match[dc], c.peerCommit[dc]
		switch {
		case m < last && now >= c.log[m-c.base].sentUs+c.rtoUs[dc]:
			end := min(last, m+batchEntries)
			entries := make([]Entry, 0, end-m)
			for i := m; i < end; i++ {
				entries = append(entries, c.log[i-c.base].e)
			}
			c.r.send(dc, &Accept{Entries: entries, Commit: c.commit})
		case m >= last && p < c.commit && now >= c.log[p-c.base].chosenUs+c.rtoUs[dc]:
			c.r.send(dc, &Accept{Commit: c.commit})
		default:
			continue
		}
		c.nextSend[dc] = now + c.rtoUs[dc]
	}
}
