// Package ogre implements Ogre (spec ogre.md, after seed 000, Chapter 5): optimistic
// geo-replication in which read-modify (RM) transactions read locally, buffer their writes and
// commit after one round of voting that a majority of datacenters approves, and read-only
// transactions read a consistent snapshot of the local RoT-Storage without any WAN message.
//
// Every datacenter holds a full replica of two storages:
//
//   - the current storage (cur, readers, pending): one version per key, installed by Thomas'
//     write rule, against which Prepare checks read versions and pending conflicts (Alg. 7);
//   - the RoT-Storage (rot.go): multi-version, fed by dependency-checked ingestion of committed
//     transactions (Alg. 8), and served by ReadSnapshot requests at its stable timestamp
//     (Alg. 9). It records what it applies, in order and without values, in the replica's
//     protocol.Env store: each key's installation order there is the key's version order, which
//     the checker reads. With rot_units ≥ 1 the RoT-Storage runs on unit nodes of their own
//     instead (unit.go), fed by the replica's ingestion stream.
//
// Choices where the spec and the seed are silent, or that Meridian's shape imposes:
//
//   - The coordinator. In the seed the client broadcasts Prepare, collects the votes and
//     broadcasts the decision (Alg. 6). In Meridian a client talks only to its local replica, so
//     that replica runs Alg. 6 on the client's behalf, one intra-datacenter hop away: the commit
//     latency is still the RTT to the nearest majority (spec §7.6), plus the hop. The seed's
//     client persists each transaction before executing it (spec §1.2, §4.6); here the
//     coordinator's state is the replica's, which the network server logs before any effect
//     leaves the node.
//   - Reliability. Meridian's links lose messages during outages and partitions, so the
//     coordinator retransmits Prepare to the replicas that have not voted and the Decision to
//     those that have not acknowledged it (param retry, default 2× the largest RTT). It aborts
//     once a positive majority is impossible, or after the timeout (spec A4; param timeout,
//     default 2× the largest RTT + 1 s), and always broadcasts the decision. A replica that
//     already voted positive answers a repeated Prepare with a fresh positive vote; the
//     coordinator counts each replica's first vote only.
//   - Read-only transactions through Commit. T-YCSB draws transactions without writes; they go
//     through the commit path as RM transactions with an empty write set (votes, Readers,
//     read-from dependencies), so they are one-copy serializable like the others. Read-only
//     transactions proper are ReadSnapshot requests, answered by the RoT-Storage.
//   - Versions: Pred is the largest current version among the positive votes and the new
//     version is Pred+1 (spec A1); RoT checks RBDeps ⊆ HistReaders (A3) and registers a reader
//     only for keys it does not write (A2).
//   - Garbage collection (param gc_after, default 60 s): a replica forgets a transaction it
//     processed the decision of gc_after later, raising its client's watermark to the
//     transaction's sequence number; a Prepare or Commit at or below a client's watermark is
//     refused (a negative vote, an error reply), which is always safe because a client runs one
//     transaction at a time. A Decision of a forgotten transaction is taken for a repeat and
//     only acknowledged: this assumes that a decision retransmitted by its coordinator reaches
//     a replica within gc_after of a later decision of the same client (FIFO links make it
//     immediate; in the simulator's chaos mode reordering stays within a few RTTs).
//   - RoT garbage collection (spec §8 [REC]): every housekeeping tick drops the RoT versions
//     no snapshot can read any more (rot.go); a read-only transaction larger than ro_chunk keys
//     is read over several inputs and pins its snapshot until it is answered.
//
// `ogre-basic` (spec §4.7) is the same protocol without dependency tracking: no Readers, no
// read-before sets in votes and decisions, and its store installs each key's versions in
// version order only (no read-from or read-before ordering), so it serves no read-only
// transactions; it exists for the overhead experiment.
package ogre

import (
	"fmt"
	"slices"

	"github.com/meridian-kv/meridian/protocol"
	"github.com/meridian-kv/meridian/protocol/txn"
	"github.com/meridian-kv/meridian/protocols/registry"
)

func init() {
	registry.Register("ogre", registry.Entry{
		Description: "Ogre: local reads, one round of majority voting with dependency tracking, local consistent read-only snapshots (RoT-Storage)",
		New:         New(true), Codec: Codec, Family: registry.ReadWrite, SerializableSnapshotsPerDC: true, Nodes: nodesFor,
		DeployParams: protocol.Params{ParamRoTUnits: "1"},
	})
	registry.Register("ogre-basic", registry.Entry{
		Description: "Ogre without dependency tracking or RoT-Storage (the overhead baseline, spec §4.7)",
		New:         New(false), Codec: Codec, Family: registry.ReadWrite,
	})
}

// Parameter names Ogre accepts.
const (
	// ParamTimeout is how long a coordinator waits for a majority before it aborts (default 2×
	// the largest RTT + 1 s).
	ParamTimeout = "timeout"
	// ParamRetry is how often a coordinator retransmits unanswered Prepares and unacknowledged
	// Decisions (default 2× the largest RTT, at least 10 ms).
	ParamRetry = "retry"
	// ParamGCAfter is how long a replica remembers a transaction after its decision (default
	// 60 s; see the package comment).
	ParamGCAfter = "gc_after"
	// ParamROChunk is how many keys a RoT-Storage reads for a read-only transaction per input
	// (default 1000): a larger transaction stays in flight over several inputs, between which
	// committed transactions are ingested, as on a RoT unit whose readers run beside its
	// ingestion (spec §4.4); its snapshot is pinned against garbage collection meanwhile.
	ParamROChunk = "ro_chunk"
)

// Abort reasons Ogre adds to the shared ones.
const (
	// ReasonPendingConflict: a majority voted no because the transaction conflicted with a
	// transaction pending there (or was refused as already seen).
	ReasonPendingConflict txn.AbortReason = "pending-conflict"
	// ReasonTimeout: no majority voted within the timeout.
	ReasonTimeout txn.AbortReason = "timeout"
)

const (
	timerTick protocol.TimerID = iota + 1 // housekeeping
	timerRead                             // the next chunk of the read-only transactions in flight
)

const tickUs = 10_000 // housekeeping period: timeouts, retransmission, garbage collection

const defaultROChunk = 1000

// current is the current storage's version of a key.
type current struct {
	value  []byte
	ver    uint64 // committed overwrites of the key so far (0: the initial version)
	writer txn.ID
}

// coordinated is a transaction this replica coordinates, from its Commit request until every
// replica acknowledged the decision.
type coordinated struct {
	t          *txn.Txn
	client     txn.ClientID
	seq        uint64
	deadlineUs int64
	resendUs   int64
	voted      []bool // per datacenter
	yes, no    int
	stale      int        // negative votes caused by a stale read (the others: a pending conflict)
	pred       []int64    // per write: the largest version a positive vote reported; -1 before any
	rbdeps     [][]txn.ID // per write: the readers of version pred, merged over the votes
	decision   *Decision
	acked      []bool
	unacked    int
}

// record is a transaction whose decision this replica processed, to forget from atUs on.
type record struct {
	id   txn.ID
	atUs int64
}

// Replica is one Ogre replica: current storage, RoT-Storage, and the coordinator of its local
// clients' transactions.
type Replica struct {
	env                         protocol.Env
	nodeOf                      []protocol.NodeID // replica of each datacenter
	dcOf                        []int             // datacenter of each node
	self, n, majority           int
	tracking                    bool // dependency tracking and RoT-Storage (false: ogre-basic)
	timeoutUs, retryUs, gcAfter int64

	// Current storage (Alg. 7).
	cur      map[string]*current
	readers  map[string]map[txn.ID]struct{} // committed readers of each key's current version
	pending  map[txn.ID]*txn.Txn
	pendingW map[string]int // pending writers of each key
	pendingR map[string]int // pending readers of each key

	rot *rot

	// RoT units (unit.go): this datacenter's unit nodes, the ingestion stream's entries not yet
	// held by every unit (numbered from streamBase+1), and each unit's acknowledged prefix.
	units        []protocol.NodeID
	stream       []*Decision
	streamBase   uint64
	unitAcked    []uint64
	unitResendUs []int64

	decided map[txn.ID]bool // transactions whose decision this replica processed
	done    []record        // the same, in decision order, to forget
	forgot  map[txn.ClientID]uint32

	coords map[txn.ID]*coordinated
	inbox  []protocol.Message // messages to itself, handled after the current input
}

// New returns the factory of Ogre (tracking) or Basic-Ogre. It needs exactly one replica per
// datacenter, and with rot_units = U ≥ 1 (Ogre only) U RoT units per datacenter placed by
// UnitNodes; it accepts the parameters timeout, retry and gc_after (Go durations), ro_chunk and
// rot_units.
func New(tracking bool) protocol.Factory { return newFactory(tracking, false) }

// newFactory is New; unsafeSkipDeps makes the RoT-Storage apply committed transactions without
// waiting for their read-from and read-before dependencies, a broken Ogre that only tests build,
// to show that the checker catches it.
func newFactory(tracking, unsafeSkipDeps bool) protocol.Factory {
	return func(pc protocol.Config, env protocol.Env) (protocol.Replica, error) {
		p := pc.Params
		if err := p.CheckKnown([]string{ParamTimeout, ParamRetry, ParamGCAfter, ParamROChunk, ParamRoTUnits}, nil); err != nil {
			return nil, fmt.Errorf("ogre: %w", err)
		}
		units, err := rotUnits(p)
		if err != nil {
			return nil, err
		}
		if units > 0 && !tracking {
			return nil, fmt.Errorf("ogre-basic has no RoT-Storage, so no %s", ParamRoTUnits)
		}
		nodeOf, unitsOf, self, err := placement(pc, units)
		if err != nil {
			return nil, err
		}
		chunk, err := p.Int(ParamROChunk, defaultROChunk)
		if err != nil || chunk <= 0 {
			return nil, fmt.Errorf("ogre: parameter %s must be a positive number of keys (%v)", ParamROChunk, err)
		}
		if pc.SelfNode().Partition > 0 {
			return &Unit{env: env, replica: nodeOf[self], rot: newRoT(env, true, unsafeSkipDeps, chunk), early: map[uint64]*Decision{}}, nil
		}
		rotTracking := tracking && units == 0 // with units, the replica records the ww order only
		if !rotTracking {
			chunk = 0 // no RoT-Storage to read
		}
		n := len(nodeOf)
		maxRTTUs := int64(0)
		for dc := range n {
			maxRTTUs = max(maxRTTUs, int64(pc.Topology.MaxRTTMs(dc)*1000))
		}
		durations := map[string]int64{ParamTimeout: 2*maxRTTUs + 1_000_000, ParamRetry: max(2*maxRTTUs, 10_000), ParamGCAfter: 60_000_000}
		for _, name := range []string{ParamTimeout, ParamRetry, ParamGCAfter} {
			v, err := p.Duration(name, durations[name])
			if err != nil {
				return nil, fmt.Errorf("ogre: %w", err)
			}
			if v <= 0 {
				return nil, fmt.Errorf("ogre: parameter %s must be positive", name)
			}
			durations[name] = v
		}
		dcOf := make([]int, len(pc.Nodes))
		for i, nd := range pc.Nodes {
			dcOf[i] = nd.DC
		}
		return &Replica{
			units: unitsOf[self], unitAcked: make([]uint64, units), unitResendUs: make([]int64, units),
			env: env, nodeOf: nodeOf, dcOf: dcOf, self: self, n: n, majority: n/2 + 1, tracking: tracking,
			timeoutUs: durations[ParamTimeout], retryUs: durations[ParamRetry], gcAfter: durations[ParamGCAfter],
			cur: map[string]*current{}, readers: map[string]map[txn.ID]struct{}{}, pending: map[txn.ID]*txn.Txn{},
			pendingW: map[string]int{}, pendingR: map[string]int{}, rot: newRoT(env, rotTracking, unsafeSkipDeps, chunk),
			decided: map[txn.ID]bool{}, forgot: map[txn.ClientID]uint32{}, coords: map[txn.ID]*coordinated{},
		}, nil
	}
}

// Start arms the housekeeping timer.
func (r *Replica) Start() { r.env.SetTimer(tickUs, timerTick) }

// send delivers m to datacenter dc's replica; to itself it is handled after the current input.
func (r *Replica) send(dc int, m protocol.Message) {
	if dc == r.self {
		r.inbox = append(r.inbox, m)
		return
	}
	r.env.Send(r.nodeOf[dc], m)
}

// drain handles the messages this replica sent itself, in order.
func (r *Replica) drain() {
	for len(r.inbox) > 0 {
		m := r.inbox[0]
		r.inbox = r.inbox[1:]
		r.handle(r.self, m)
	}
	r.inbox = nil
}

// HandleMessage processes one peer message; malformed ones are ignored.
func (r *Replica) HandleMessage(from protocol.NodeID, m protocol.Message) {
	if from < 0 || int(from) >= len(r.dcOf) {
		return
	}
	if ack, ok := m.(*IngestAck); ok {
		if i := slices.Index(r.units, from); i >= 0 && ack != nil {
			r.onIngestAck(i, ack.Seq)
		}
		return
	}
	if r.nodeOf[r.dcOf[from]] != from {
		return
	}
	r.handle(r.dcOf[from], m)
	r.drain()
}

func (r *Replica) handle(dc int, m protocol.Message) {
	switch m := m.(type) {
	case *Prepare:
		if m != nil && m.Txn != nil {
			r.onPrepare(dc, m.Txn)
		}
	case *Vote:
		if m != nil {
			r.onVote(dc, m)
		}
	case *Decision:
		if wellFormed(m, r.tracking) {
			r.onDecision(dc, m)
		}
	case *DecisionAck:
		if m != nil {
			r.onAck(dc, m.Txn)
		}
	}
}

// wellFormed reports whether d is a decision a replica can process: a transaction, and for a
// commit one version (and, with tracking, one read-before set) per write.
func wellFormed(d *Decision, tracking bool) bool {
	if d == nil || d.Txn == nil {
		return false
	}
	if !d.Commit {
		return true
	}
	return len(d.Pred) == len(d.Txn.Writes) && (!tracking || len(d.RBDeps) == len(d.Txn.Writes))
}

// HandleRequest serves Get from the current storage and ReadSnapshot from the RoT-Storage, and
// coordinates Commit.
func (r *Replica) HandleRequest(req protocol.Request) {
	switch req.Kind {
	case protocol.Get:
		v := r.cur[req.Key]
		rep := protocol.Reply{Client: req.Client, Seq: req.Seq}
		if v != nil {
			rep.Value, rep.Version = v.value, v.writer
		}
		r.env.Reply(rep)
		return
	case protocol.ReadSnapshot:
		switch {
		case !r.tracking:
			r.env.Reply(protocol.Reply{Client: req.Client, Seq: req.Seq, Err: "ogre-basic: no RoT-Storage, so no read-only snapshots"})
			return
		case len(r.units) > 0:
			r.env.Reply(protocol.Reply{Client: req.Client, Seq: req.Seq, Err: fmt.Sprintf("ogre: read-only transactions are served by this datacenter's RoT unit nodes (node ids %v), not by its replica", r.units)})
			return
		}
		r.rot.serve(r.env, req)
		return
	}
	if !protocol.AdmitCommit(r.env, req, "ogre") {
		return
	}
	r.onCommit(req)
	r.drain()
}

// HandleTimer runs the next chunk of the read-only transactions in flight, or the housekeeping:
// coordinator timeouts and retransmissions, then garbage collection of transaction records and
// of RoT versions.
func (r *Replica) HandleTimer(id protocol.TimerID) {
	if id == timerRead {
		r.rot.onReadTimer(r.env)
		return
	}
	if id != timerTick {
		return
	}
	now := r.env.NowUs()
	for _, id := range sortedIDs(r.coords) {
		c := r.coords[id]
		switch {
		case c.decision == nil && now >= c.deadlineUs:
			r.decide(c, false, ReasonTimeout)
		case c.decision == nil && now >= c.resendUs:
			c.resendUs = now + r.retryUs
			for dc := range r.n {
				if !c.voted[dc] {
					r.send(dc, &Prepare{Txn: c.t})
				}
			}
		case c.decision != nil && now >= c.resendUs:
			c.resendUs = now + r.retryUs
			for dc := range r.n {
				if !c.acked[dc] {
					r.send(dc, c.decision)
				}
			}
		}
	}
	r.forget(now)
	r.resendStream(now)
	if r.rot.chains != nil {
		r.rot.collect()
	}
	r.drain()
	r.env.SetTimer(tickUs, timerTick)
}

// forget drops what the replica remembers of transactions decided gc_after ago.
func (r *Replica) forget(now int64) {
	i := 0
	for ; i < len(r.done) && now-r.done[i].atUs >= r.gcAfter; i++ {
		id := r.done[i].id
		delete(r.decided, id)
		if seq := id.Seq(); seq > r.forgot[id.Client()] {
			r.forgot[id.Client()] = seq
		}
	}
	r.done = r.done[i:]
}

// seen reports whether t is a transaction this replica decided or forgot.
func (r *Replica) seen(id txn.ID) bool {
	return r.decided[id] || id.Seq() <= r.forgot[id.Client()]
}

// onCommit starts coordinating the transaction of req (Alg. 6): Prepare to every replica.
func (r *Replica) onCommit(req protocol.Request) {
	t := req.Txn
	switch {
	case t.ID.Client() != req.Client:
		r.env.Reply(protocol.Reply{Client: req.Client, Seq: req.Seq, Err: fmt.Sprintf("ogre: transaction %v does not belong to client %d", t.ID, req.Client)})
		return
	case r.coords[t.ID] != nil:
		return // already coordinating: the decision answers
	case r.seen(t.ID):
		r.env.Reply(protocol.Reply{Client: req.Client, Seq: req.Seq, Err: fmt.Sprintf("ogre: transaction %v was already submitted", t.ID)})
		return
	case len(t.Reads) == 0 && len(t.Writes) == 0:
		r.env.Reply(protocol.Reply{Client: req.Client, Seq: req.Seq, Status: txn.Committed})
		return
	}
	now := r.env.NowUs()
	c := &coordinated{t: t, client: req.Client, seq: req.Seq, deadlineUs: now + r.timeoutUs, resendUs: now + r.retryUs,
		voted: make([]bool, r.n), pred: make([]int64, len(t.Writes)), rbdeps: make([][]txn.ID, len(t.Writes))}
	for i := range c.pred {
		c.pred[i] = -1
	}
	r.coords[t.ID] = c
	for dc := range r.n {
		r.send(dc, &Prepare{Txn: t})
	}
}

// onPrepare votes on t (Alg. 7): no if it conflicts with a pending transaction or read a version
// that is no longer current here, yes otherwise, with the current version and (tracking) the
// committed readers of each key it writes.
func (r *Replica) onPrepare(coordDC int, t *txn.Txn) {
	if _, ok := r.pending[t.ID]; ok {
		r.send(coordDC, r.positiveVote(t))
		return
	}
	if r.seen(t.ID) {
		r.send(coordDC, &Vote{Txn: t.ID})
		return
	}
	if r.conflictsWithPending(t) {
		r.send(coordDC, &Vote{Txn: t.ID})
		return
	}
	for _, rd := range t.Reads {
		if r.writerOf(rd.Key) != rd.Version {
			r.send(coordDC, &Vote{Txn: t.ID, Stale: true})
			return
		}
	}
	r.pending[t.ID] = t
	for _, w := range t.Writes {
		r.pendingW[w.Key]++
	}
	for _, rd := range t.Reads {
		r.pendingR[rd.Key]++
	}
	r.send(coordDC, r.positiveVote(t))
}

// conflictsWithPending reports whether t overlaps a pending transaction other than read/read.
func (r *Replica) conflictsWithPending(t *txn.Txn) bool {
	for _, w := range t.Writes {
		if r.pendingW[w.Key] > 0 || r.pendingR[w.Key] > 0 {
			return true
		}
	}
	for _, rd := range t.Reads {
		if r.pendingW[rd.Key] > 0 {
			return true
		}
	}
	return false
}

// writerOf is the writer of key's current version (txn.None for the initial one).
func (r *Replica) writerOf(key string) txn.ID {
	if v := r.cur[key]; v != nil {
		return v.writer
	}
	return txn.None
}

func (r *Replica) positiveVote(t *txn.Txn) *Vote {
	v := &Vote{Txn: t.ID, Positive: true, Versions: make([]uint64, len(t.Writes))}
	if r.tracking {
		v.RBDeps = make([][]txn.ID, len(t.Writes))
	}
	for i, w := range t.Writes {
		if cv := r.cur[w.Key]; cv != nil {
			v.Versions[i] = cv.ver
		}
		if r.tracking {
			v.RBDeps[i] = sortedIDs(r.readers[w.Key])
		}
	}
	return v
}

// onVote counts a replica's first vote on a transaction this replica coordinates and decides
// once a majority voted yes, or once a yes majority is impossible. A positive vote raises each
// write's predecessor to the newest version reported, replacing its readers, or merges the
// readers of an equal version (Alg. 6).
func (r *Replica) onVote(dc int, v *Vote) {
	c := r.coords[v.Txn]
	if c == nil || c.decision != nil || c.voted[dc] {
		return
	}
	if v.Positive && (len(v.Versions) != len(c.t.Writes) || (r.tracking && len(v.RBDeps) != len(c.t.Writes))) {
		return // malformed: not a vote this transaction could get
	}
	c.voted[dc] = true
	if !v.Positive {
		c.no++
		if v.Stale {
			c.stale++
		}
		if c.no > r.n-r.majority {
			reason := ReasonPendingConflict
			if 2*c.stale >= c.no {
				reason = txn.ReasonStaleRead
			}
			r.decide(c, false, reason)
		}
		return
	}
	c.yes++
	for i, rv := range v.Versions {
		switch {
		case int64(rv) > c.pred[i]:
			c.pred[i] = int64(rv)
			if r.tracking {
				c.rbdeps[i] = slices.Clone(v.RBDeps[i])
			}
		case int64(rv) == c.pred[i] && r.tracking:
			c.rbdeps[i] = union(c.rbdeps[i], v.RBDeps[i])
		}
	}
	if c.yes >= r.majority {
		r.decide(c, true, "")
	}
}

// decide answers the client and broadcasts the decision, which the tick retransmits until
// every replica acknowledged it.
func (r *Replica) decide(c *coordinated, commit bool, reason txn.AbortReason) {
	d := &Decision{Txn: c.t, Commit: commit}
	if commit {
		d.Pred = make([]uint64, len(c.pred))
		for i, p := range c.pred {
			d.Pred[i] = uint64(p)
		}
		if r.tracking {
			d.RBDeps = c.rbdeps
		}
		r.env.Reply(protocol.Reply{Client: c.client, Seq: c.seq, Status: txn.Committed})
	} else {
		d.Txn = &txn.Txn{ID: c.t.ID}
		r.env.Reply(protocol.Reply{Client: c.client, Seq: c.seq, Status: txn.Aborted, Reason: reason})
	}
	c.decision, c.acked, c.unacked, c.resendUs = d, make([]bool, r.n), r.n, r.env.NowUs()+r.retryUs
	for dc := range r.n {
		r.send(dc, d)
	}
}

// onAck stops retransmitting a decision to dc, and forgets the transaction once every replica
// acknowledged it.
func (r *Replica) onAck(dc int, id txn.ID) {
	c := r.coords[id]
	if c == nil || c.decision == nil || c.acked[dc] {
		return
	}
	c.acked[dc] = true
	if c.unacked--; c.unacked == 0 {
		delete(r.coords, id)
	}
}

// onDecision processes a decision once (Alg. 7): a commit goes to the RoT-Storage, leaves the
// pending set and installs its writes in the current storage by Thomas' write rule, then
// registers its reads of still-current versions; an abort leaves the pending set. Every copy is
// acknowledged.
func (r *Replica) onDecision(coordDC int, d *Decision) {
	id := d.Txn.ID
	if !r.seen(id) {
		r.decided[id] = true
		r.done = append(r.done, record{id: id, atUs: r.env.NowUs()})
		if d.Commit {
			r.rot.ingest(d)
			r.forward(d)
		}
		r.unpend(id)
		if d.Commit {
			r.install(d)
		}
	}
	r.send(coordDC, &DecisionAck{Txn: id})
}

// unpend removes a transaction from the pending set, if it is there.
func (r *Replica) unpend(id txn.ID) {
	t, ok := r.pending[id]
	if !ok {
		return
	}
	delete(r.pending, id)
	for _, w := range t.Writes {
		if r.pendingW[w.Key]--; r.pendingW[w.Key] == 0 {
			delete(r.pendingW, w.Key)
		}
	}
	for _, rd := range t.Reads {
		if r.pendingR[rd.Key]--; r.pendingR[rd.Key] == 0 {
			delete(r.pendingR, rd.Key)
		}
	}
}

// install applies a committed transaction to the current storage: its writes by Thomas' write
// rule (a version older than the installed one is skipped), then, with tracking, its reads of
// versions that are still current join their keys' readers. Writes come first, so a transaction
// that reads and writes a key is not a reader of its own version.
func (r *Replica) install(d *Decision) {
	for i, w := range d.Txn.Writes {
		ver := d.Pred[i] + 1
		if v := r.cur[w.Key]; v == nil || ver > v.ver {
			r.cur[w.Key] = &current{value: w.Value, ver: ver, writer: d.Txn.ID}
			delete(r.readers, w.Key)
		}
	}
	if !r.tracking {
		return
	}
	for _, rd := range d.Txn.Reads {
		if r.writerOf(rd.Key) == rd.Version {
			set := r.readers[rd.Key]
			if set == nil {
				set = map[txn.ID]struct{}{}
				r.readers[rd.Key] = set
			}
			set[d.Txn.ID] = struct{}{}
		}
	}
}

// sortedIDs returns the keys of m in increasing order: outputs never depend on map iteration.
func sortedIDs[V any](m map[txn.ID]V) []txn.ID {
	ids := make([]txn.ID, 0, len(m))
	for id := range m {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids
}

// union returns the sorted union of two sorted id lists.
func union(a, b []txn.ID) []txn.ID {
	out := make([]txn.ID, 0, len(a)+len(b))
	out = append(append(out, a...), b...)
	slices.Sort(out)
	return slices.Compact(out)
}
