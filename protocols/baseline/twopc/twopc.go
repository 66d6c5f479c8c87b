// Package twopc implements the "2PC over Paxos" baseline (protocol name "2pc-paxos"): the
// Spanner-inspired single-coordinator commit protocol of spec helios-message-futures.md §5.2,
// whose expected uncontended commit latency at datacenter X is RTT(X,V) + RTT(V, 2nd-closest
// other DC) (§5.6; on aws-helios V 78, O 144, C 156, I 162, S 346) and whose behaviour tests are
// §7.4.
//
// Every datacenter runs one full replica (protocol.FullReplicas). One of them, the coordinator
// (parameter "coordinator", default V when the topology has it, else its first datacenter, until
// a fail-over), keeps the only lock table and leads a Multi-Paxos log whose acceptors and
// learners are all replicas. Clients talk only to their local replica, which forwards to the
// coordinator it knows (the leader of the highest term its acceptor has promised):
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
//   - While the coordinator holds its lease (paxos.go) only phase 2 runs: Accept to every
//     replica, chosen once a majority (the coordinator included) acknowledged. Then the
//     coordinator applies the writes, releases the locks, replies through the client's replica,
//     and sends the new chosen index to the learners asynchronously. Every replica applies the
//     chosen entries in log order, so all install identical version orders. Acknowledgements are
//     cumulative (an acceptor acknowledges the longest gap-free prefix it holds), and on every
//     retransmission tick the coordinator resends each lagging replica the suffix it has not
//     acknowledged, so learners fill gaps in log order.
//
// Fail-over (paxos.go). Every Accept, and a heartbeat when there is nothing to send, renews the
// coordinator's lease: an acceptor that hears from it promises no other candidate for the lease
// duration (parameter "lease", default 500ms) on its own clock, and the coordinator counts its
// lease from the send time of the messages a majority acknowledged, shortened for the clock
// drift bound (parameter "max_drift_ppm", default 1000). A coordinator serves requests only
// while its lease is valid. When a replica has not heard from the coordinator for the lease plus
// a heartbeat, the next datacenter in the fail-over order (parameter "failover_order"; default
// the initial coordinator, then the others by RTT from it) runs phase 1 with a higher ballot
// (each further one waits one more lease), recovers the log (the highest-ballot value of every
// position a majority reports, no-ops in the gaps, and a fence that marks older entries beyond
// the recovered end as dead), has it chosen in its own term, and only then serves. Its lock
// table starts empty: a transaction that read at the old coordinator aborts at commit
// (ReasonLockLost: the new coordinator never grants a commit whose read locks it did not grant),
// and one whose commit record the recovered log does not hold is aborted (presumed abort,
// ReasonFailover). Requests carry the term they were forwarded in, and a coordinator serves only
// its own term's, so a request is never served by two coordinators. A returning old coordinator
// learns the higher ballot from the first acceptor that refuses it and follows. Only this
// replica's clock is ever read: skew and bounded drift are harmless (see paxos.go).
//
// Losses between a replica and the coordinator are covered by a timeout at the client's replica
// (parameter "timeout", default 1s). A Get that times out is answered with Reply.Err, its
// transaction is marked aborted (reason "timeout") and the replica tells the coordinator to
// abort it, repeating until a coordinator answers. A Commit that times out cannot be decided
// locally (the coordinator may have committed it), so the replica asks the coordinator to abort
// it unless already decided, repeating until it answers, and relays the answer. When the
// coordinator changes, the client's replica answers the Gets it forwarded with an error
// (ReasonFailover) and, at its next tick, asks the new coordinator to abort the pending Commits.
// Every replica keeps the outcome of every transaction it decided or applied for gc_after
// (parameter, default 10s), so that late, duplicated or reordered requests are answered
// consistently and never take locks again, also by a later coordinator. Forgetting a transaction
// raises its client's watermark to the transaction's sequence number, and a request about an
// untracked transaction at or below the watermark is refused: a Get is answered aborted
// ("forgotten"), a Commit or an AbortReq with an Outcome of unknown status, which the client's
// replica relays as an error (outcome unknown). Refusing never breaks safety, and a client runs
// one transaction at a time (client.Session), so only requests about finished transactions are
// refused. The log prefix every replica has applied is dropped. Memory is therefore bounded by
// the transactions of the last gc_after, one watermark per client and the log suffix some
// replica still lacks. Safety depends on no message being delivered and on no clock; only
// liveness waits for the faults to end.
package twopc

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/meridian-kv/meridian/protocol"
	"github.com/meridian-kv/meridian/protocol/txn"
	"github.com/meridian-kv/meridian/protocols/registry"
)

func init() {
	registry.Register("2pc-paxos", registry.Entry{
		Family:      registry.ReadWrite,
		Description: "2PC over Paxos (Spanner-inspired): locks and a leased Multi-Paxos log at one coordinator (default V), with fail-over",
		New:         New,
		Codec:       Codec,
	})
}

// Parameter names 2pc-paxos accepts.
const (
	ParamCoordinator   = "coordinator"    // datacenter name of the initial coordinator (default V, else the first)
	ParamTimeout       = "timeout"        // forwarded-request timeout at the client's replica (default 1s)
	ParamGCAfter       = "gc_after"       // how long a replica keeps a finished transaction (default 10s)
	ParamLease         = "lease"          // the coordinator's lease, on the acceptors' clocks (default 500ms)
	ParamMaxDriftPPM   = "max_drift_ppm"  // bound on any clock's rate error, in ppm (default 1000)
	ParamFailoverOrder = "failover_order" // comma-separated datacenters, most preferred first
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
	// ReasonFailover: the coordinator changed while the transaction ran (its locks were lost),
	// or its commit record was not in the log the new coordinator recovered.
	ReasonFailover txn.AbortReason = "failover"
)

const timerTick protocol.TimerID = 1

const (
	tickUs         = 10_000 // retransmission, timeout and election check period
	batchEntries   = 128    // most log entries per retransmitted Accept
	catchupBatches = 8      // most Accepts of entries sent to one lagging replica per timeout
	maxQueued      = 4096   // most requests a coordinator holds while it cannot serve
)

// Replica is one 2pc-paxos replica: the forwarding proxy for its local clients, an acceptor and
// learner of the log, and, while its datacenter coordinates, the coordinator.
type Replica struct {
	env       protocol.Env
	nodeOf    []protocol.NodeID
	dcOf      map[protocol.NodeID]int
	self, n   int
	rttMs     [][]float64
	timeoutUs int64
	gcAfterUs int64
	rtoUs     []int64 // per datacenter: retransmission timeout

	// Proxy state.
	nextRid uint64
	reads   map[uint64]*pendingRead
	commits map[txn.ID]*pendingCommit
	doomed  map[txn.ID]txn.AbortReason // aborted transactions whose Commit has not come yet
	orphans map[txn.ID]int64           // aborts no coordinator has confirmed: next send time

	paxos
	co     *coordinator
	selfQ  []protocol.Message // messages to this replica, delivered after the current one
	inLoop bool
}

type pendingRead struct {
	client   txn.ClientID
	seq      uint64
	txn      txn.ID
	to       int // the coordinator it was forwarded to
	deadline int64
}

type pendingCommit struct {
	client   txn.ClientID
	seq      uint64
	deadline int64 // when to (re)send an AbortReq
}

// New builds a 2pc-paxos replica. It needs exactly one replica per datacenter and accepts the
// parameters "coordinator", "timeout", "gc_after", "lease", "max_drift_ppm" and
// "failover_order".
func New(pc protocol.Config, env protocol.Env) (protocol.Replica, error) {
	nodeOf, self, err := protocol.FullReplicas(pc)
	if err != nil {
		return nil, err
	}
	p := pc.Params
	if err := p.CheckKnown([]string{ParamCoordinator, ParamTimeout, ParamGCAfter, ParamLease, ParamMaxDriftPPM, ParamFailoverOrder}, nil); err != nil {
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
	leaseUs, err := p.Duration(ParamLease, 500_000)
	if err != nil {
		return nil, fmt.Errorf("2pc-paxos: %w", err)
	}
	if leaseUs < 5*tickUs {
		return nil, fmt.Errorf("2pc-paxos: parameter %s must be at least %dms", ParamLease, 5*tickUs/1000)
	}
	driftPPM, err := p.Int(ParamMaxDriftPPM, 1000)
	if err != nil {
		return nil, fmt.Errorf("2pc-paxos: %w", err)
	}
	if driftPPM < 0 || driftPPM > 100_000 {
		return nil, fmt.Errorf("2pc-paxos: parameter %s must be in [0, 100000]", ParamMaxDriftPPM)
	}
	n := len(nodeOf)
	if n > maxDCs {
		return nil, fmt.Errorf("2pc-paxos: at most %d datacenters", maxDCs)
	}
	order, err := failoverOrder(p[ParamFailoverOrder], coord, topo.DCs, topo.RTTMs)
	if err != nil {
		return nil, err
	}
	r := &Replica{
		env: env, nodeOf: nodeOf, dcOf: map[protocol.NodeID]int{}, self: self, n: n,
		rttMs:     topo.RTTMs,
		timeoutUs: timeoutUs,
		gcAfterUs: gcAfterUs,
		rtoUs:     make([]int64, n),
		reads:     map[uint64]*pendingRead{},
		commits:   map[txn.ID]*pendingCommit{},
		doomed:    map[txn.ID]txn.AbortReason{},
		orphans:   map[txn.ID]int64{},
	}
	for dc, nd := range nodeOf {
		r.dcOf[nd] = dc
		r.rtoUs[dc] = int64(topo.RTTMs[self][dc]*2000) + 20_000
	}
	r.co = newCoordinator(r)
	r.initPaxos(coord, order, leaseUs, int64(driftPPM))
	return r, nil
}

// failoverOrder parses the fail-over preference: the datacenters named in spec (comma-separated,
// each at most once), then the others by RTT from the initial coordinator (ties by index), the
// coordinator first among them.
func failoverOrder(spec string, coord int, dcs []string, rttMs [][]float64) ([]int, error) {
	var order []int
	if spec != "" {
		for _, name := range strings.Split(spec, ",") {
			i := slices.Index(dcs, strings.TrimSpace(name))
			if i < 0 || slices.Contains(order, i) {
				return nil, fmt.Errorf("2pc-paxos: parameter %s: %q is not a datacenter or is listed twice", ParamFailoverOrder, name)
			}
			order = append(order, i)
		}
	}
	rest := []int{}
	for dc := range dcs {
		if !slices.Contains(order, dc) {
			rest = append(rest, dc)
		}
	}
	slices.SortStableFunc(rest, func(a, b int) int {
		da, db := rttMs[coord][a], rttMs[coord][b]
		switch {
		case a == coord || da < db && b != coord:
			return -1
		case b == coord || db < da:
			return 1
		}
		return 0
	})
	return append(order, rest...), nil
}

// Start arms the periodic tick and starts the lease clocks.
func (r *Replica) Start() {
	r.startPaxos()
	r.env.SetTimer(tickUs, timerTick)
}

// HandleTimer runs the periodic tick: request timeouts and abort retransmissions at the proxy,
// garbage collection, and the log's retransmissions, heartbeats and elections.
func (r *Replica) HandleTimer(id protocol.TimerID) {
	if id != timerTick {
		return
	}
	r.env.SetTimer(tickUs, timerTick)
	r.proxyTick()
	r.co.collect()
	r.paxosTick()
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
		to := r.coordinator()
		r.reads[r.nextRid] = &pendingRead{client: req.Client, seq: req.Seq, txn: req.TxnID, to: to, deadline: r.env.NowUs() + r.timeoutUs}
		r.send(to, &ReadReq{From: r.self, Ballot: r.promised, Txn: req.TxnID, Key: req.Key, Rid: r.nextRid})
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
		r.send(r.coordinator(), &CommitReq{From: r.self, Ballot: r.promised, Txn: req.Txn})
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

// drain processes messages to self, the coordinator's lock grants and the requests it held
// while it could not serve, until none is left, so no handler ever runs inside another.
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
		case r.role == leader && len(r.co.ready) > 0:
			g := r.co.ready[0]
			r.co.ready = r.co.ready[1:]
			r.co.onGranted(g)
		case len(r.queue) > 0 && r.canServe():
			m := r.queue[0]
			r.queue = r.queue[1:]
			r.serve(m)
		default:
			return
		}
	}
}

// dispatch handles one message from datacenter dc; malformed or misdirected ones are ignored.
func (r *Replica) dispatch(dc int, m protocol.Message) {
	switch m := m.(type) {
	case *ReadReq:
		if m.From == dc && m.Txn != txn.None && m.Key != "" {
			r.onRequest(m, m.Ballot)
		}
	case *CommitReq:
		if m.From == dc && m.Txn != nil && m.Txn.ID != txn.None {
			r.onRequest(m, m.Ballot)
		}
	case *AbortReq:
		if m.From == dc && m.Txn != txn.None {
			r.onRequest(m, 0)
		}
	case *ReadResp:
		r.onReadResp(dc, m)
	case *Outcome:
		r.onOutcome(m)
	case *Accept:
		if dc != r.self && leaderOf(m.Ballot) == dc {
			r.onAccept(dc, m)
		}
	case *Ack:
		if m.From == dc && dc != r.self {
			r.onAck(dc, m)
		}
	case *Prepare:
		if dc != r.self && leaderOf(m.Ballot) == dc {
			r.onPrepare(dc, m)
		}
	case *Promise:
		if m.From == dc && dc != r.self {
			r.onPromise(dc, m)
		}
	}
}

// onRequest takes a forwarded request at the coordinator. A Get or Commit forwarded for another
// term than this replica's own is dropped (the forwarding replica aborts it when it learns of
// the new term); requests this replica cannot serve yet (recovering, or lease lapsed) wait.
func (r *Replica) onRequest(m protocol.Message, ballot uint64) {
	switch {
	case r.role == follower:
		return
	case ballot != 0 && ballot != r.ballot:
		return
	case r.role == candidate && ballot == 0:
		return // an AbortReq reaches whoever the forwarding replica believes coordinates
	case len(r.queue) == 0 && r.canServe():
		r.serve(m)
	case len(r.queue) < maxQueued:
		r.queue = append(r.queue, m)
	}
}

// serve hands a request to the lock table.
func (r *Replica) serve(m protocol.Message) {
	switch m := m.(type) {
	case *ReadReq:
		if m.Ballot == r.ballot {
			r.co.onRead(m)
		}
	case *CommitReq:
		if m.Ballot == r.ballot {
			r.co.onCommit(m)
		}
	case *AbortReq:
		r.co.onAbort(m)
	}
}

// onReadResp answers the Get that the response belongs to, if it is still waiting.
func (r *Replica) onReadResp(dc int, m *ReadResp) {
	p, ok := r.reads[m.Rid]
	if !ok || p.txn != m.Txn || p.to != dc {
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

// onOutcome relays a decision to the waiting client, if any, and stops repeating an abort
// request. Any replica's outcome is authoritative: Committed is sent once the commit record is
// chosen, Aborted once the transaction can never commit. An outcome the sender no longer knows
// is relayed as an error.
func (r *Replica) onOutcome(m *Outcome) {
	if m.Status != txn.Committed && m.Status != txn.Aborted && m.Status != txn.Unknown {
		return
	}
	delete(r.orphans, m.Txn)
	p, ok := r.commits[m.Txn]
	if !ok {
		return
	}
	delete(r.commits, m.Txn)
	if m.Status == txn.Unknown {
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
		r.failRead(rid, ReasonTimeout)
	}
	to := r.coordinator()
	for _, id := range slices.Sorted(maps.Keys(r.commits)) {
		if p := r.commits[id]; now >= p.deadline {
			p.deadline = now + r.resendUs()
			r.send(to, &AbortReq{From: r.self, Txn: id})
		}
	}
	for _, id := range slices.Sorted(maps.Keys(r.orphans)) {
		if now >= r.orphans[id] {
			r.orphans[id] = now + r.resendUs()
			r.send(to, &AbortReq{From: r.self, Txn: id})
		}
	}
}

// failRead answers a forwarded Get with an error and dooms its transaction, whose locks the
// coordinator is asked to release.
func (r *Replica) failRead(rid uint64, reason txn.AbortReason) {
	p := r.reads[rid]
	delete(r.reads, rid)
	if _, ok := r.doomed[p.txn]; !ok {
		r.doomed[p.txn] = reason
		r.orphans[p.txn] = r.env.NowUs()
	}
	r.env.Reply(protocol.Reply{Client: p.client, Seq: p.seq, Err: abortedErr(p.txn, reason)})
}

// retarget reacts to a new term: the Gets forwarded in the old one fail (their locks, if any,
// are gone or will be released on request), and the new coordinator is asked about the pending
// Commits and the unconfirmed aborts at the next tick.
func (r *Replica) retarget() {
	for _, rid := range slices.Sorted(maps.Keys(r.reads)) {
		r.failRead(rid, ReasonFailover)
	}
	now := r.env.NowUs()
	for _, p := range r.commits {
		p.deadline = now
	}
	for id := range r.orphans {
		r.orphans[id] = now
	}
}

// resendUs is how often an unanswered AbortReq is repeated to the current coordinator.
func (r *Replica) resendUs() int64 {
	return int64(r.rttMs[r.self][r.coordinator()]*2000) + 50_000
}
