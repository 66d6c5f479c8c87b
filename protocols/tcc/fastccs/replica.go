package fastccs

import (
	"fmt"
	"slices"

	"github.com/meridian-kv/meridian/protocol"
	"github.com/meridian-kv/meridian/protocol/txn"
	"github.com/meridian-kv/meridian/protocols/tcc"
)

// Timers of a partition. Timers cannot be cancelled, so each handler checks what is due.
const (
	timerGossip protocol.TimerID = iota + 1
	timerGC
	timerDeadline // some pending transaction or early vote may have reached its deadline
)

// maxEarlyVotes bounds the buffered early Prepared votes (spec A4b). A vote dropped for lack of
// room is repaired by the participant's check_commit.
const maxEarlyVotes = 1 << 16

// version is one version of a key at its owner partition.
type version struct {
	value     []byte
	writer    txn.ID
	ct        VC // temporary while pending (spec A2), the commit vector once committed
	committed bool
	rank      rank // the version's place in its key's order, once committed
	// Garbage collection (spec §2.8): the last time a read returned this version, and when a
	// newer version was first seen visible (0: not yet).
	lastAccessUs   int64
	supersededAtUs int64
}

// rank orders the committed versions of a key. In one datacenter it is (ct[self], 0, 0): the
// owner's sequence number (spec A15, I14). The geo extension orders versions from several
// datacenters by (Σ ct, origin datacenter, origin sequence number), a total order every
// datacenter agrees on that extends causality (T1 ⇝ T2 gives T1.ct ≤ T2.ct and T1.ct ≠ T2.ct,
// hence a smaller sum).
type rank [3]int64

func (a rank) less(b rank) bool {
	for i := range a {
		if a[i] != b[i] {
			return a[i] < b[i]
		}
	}
	return false
}

// keyVersions are one key's committed versions, oldest first by rank. Pending versions stay in
// their pendingTx until committed, so that readers never see them and an abort only drops them.
type keyVersions struct {
	list []*version
	// collected is the largest rank of a version garbage collection removed (zero: none): a
	// round-2 read that would pick an older version may have needed the removed one.
	collected rank
}

// pendingTx is a WOT this partition holds between its WriteReq and its local commit or abort.
type pendingTx struct {
	id          txn.ID
	sn          int64
	writes      []txn.Write
	versions    []*version
	client      txn.ClientID // the latest WriteReq's sender and sequence number: the reply goes there
	seq         uint64
	coordinator int
	deadlineUs  int64 // coordinator: abort then; participant: ask with check_commit then
	// Coordinator only: the number of participants, those that voted (this partition first,
	// spec A4), and the commit vector being assembled from vc_c and the votes.
	size     int
	prepared []int
	ct       VC
	// final is the commit vector once known; the transaction then waits in the commit queue
	// and can no longer abort.
	final VC
}

// outcome is a decided transaction: a tombstone when aborted (spec A8), the commit when
// committed. Retried WriteReqs, late votes and check_commits are answered from it.
type outcome struct {
	committed   bool
	coordinator bool // ct is set: this partition coordinated the commit
	ct          VC
	atUs        int64
}

// earlyVote is a Prepared (or CheckCommit) that reached the coordinator before the client's own
// WriteReq did (spec A4b).
type earlyVote struct {
	from       int
	sn         int64
	deadlineUs int64
}

// Replica is one FastCCS partition (Algorithm 2 with the spec's fixes).
type Replica struct {
	env    protocol.Env
	cfg    settings
	slots  Slots
	dc     int
	self   int               // partition index
	slot   int               // this partition's entry in vectors
	nodeOf []protocol.NodeID // partition → node, in this datacenter
	partOf map[protocol.NodeID]int

	sn      int64
	svc     VC
	keys    map[string]*keyVersions
	multi   map[string]bool // keys with more than one version: what garbage collection scans
	pending map[txn.ID]*pendingTx
	// ready is the in-order commit queue readyToCommit (spec §2.6): sequence number → the
	// transaction to apply, or nil for a hole left by an abort.
	ready      map[int64]*pendingTx
	early      map[txn.ID][]earlyVote
	earlyCount int
	decided    map[txn.ID]*outcome
	// maxSeq is, per client, the largest transaction sequence number whose WriteReq arrived or
	// that was decided here. A client runs one transaction at a time with increasing ids, so an
	// unknown transaction at or below it is a late duplicate of one already forgotten, or one its
	// client gave up on: it is never prepared (so it can never commit), and its votes are answered
	// with abort.
	maxSeq map[txn.ClientID]uint32

	// Tree gossip: parent (-1 at the root) and children partitions, which children reported
	// since this partition last sent, and when it last sent.
	parent     int
	children   []int
	heard      []bool
	heardCount int
	lastSentUs int64
	up, down   treeLink

	geo *geoState // the geo extension's replication streams; nil in one datacenter
	// order is every version installed here by rank, for VersionOrder: on the replica's Disk,
	// outside its checkpoints (the store's installation order is the rank order in one
	// datacenter, but the store forgets collected versions; see collect).
	order *tcc.VersionLog

	// Visibility lag (tcc.VisibilityReporter), once a driver asked for it: each WOT committed
	// here whose versions are not visible yet (spec §2.3, state 3: ct ≤ svc over the whole
	// vector) waits in visWait[k] for every slot k with svc[k] < ct[k]; visWaiting counts them.
	vis        tcc.VisibilityLog
	visWait    []tcc.Waiting[*visPending]
	visWaiting int
}

// PrunesStore implements protocol.StorePruner: collect drops versions from the store.
func (r *Replica) PrunesStore() {}

// New builds a FastCCS partition. The nodes must form one datacenter of partitions 0..N−1
// (tcc.PartitionedNodes); the parameters are those of settings.
func New(pc protocol.Config, env protocol.Env) (protocol.Replica, error) {
	if dcs := pc.Topology.N(); dcs != 1 {
		return nil, fmt.Errorf("fastccs: the thesis's protocol runs in one datacenter, the topology has %d (fastccs-geo runs in several)", dcs)
	}
	return newReplica(pc, env)
}

func newReplica(pc protocol.Config, env protocol.Env) (*Replica, error) {
	cfg, err := parseSettings(pc.Params)
	if err != nil {
		return nil, err
	}
	dcs := pc.Topology.N()
	layout, err := tcc.NewLayout(pc.Nodes, dcs)
	if err != nil {
		return nil, fmt.Errorf("fastccs: %w", err)
	}
	if int(pc.Self) < 0 || int(pc.Self) >= len(pc.Nodes) {
		return nil, fmt.Errorf("fastccs: self node %d out of range", pc.Self)
	}
	me := pc.Nodes[pc.Self]
	slots := Slots{DCs: dcs, Partitions: layout.Partitions()}
	r := &Replica{env: env, cfg: cfg, slots: slots, dc: me.DC, self: me.Partition,
		slot: slots.Of(me.DC, me.Partition), nodeOf: layout.Node[me.DC], partOf: map[protocol.NodeID]int{},
		svc: make(VC, slots.Len()), keys: map[string]*keyVersions{}, multi: map[string]bool{},
		pending: map[txn.ID]*pendingTx{}, ready: map[int64]*pendingTx{}, early: map[txn.ID][]earlyVote{},
		decided: map[txn.ID]*outcome{}, maxSeq: map[txn.ClientID]uint32{}, parent: -1, order: tcc.NewVersionLog(env)}
	for p, id := range r.nodeOf {
		r.partOf[id] = p
	}
	if r.self > 0 {
		r.parent = (r.self - 1) / cfg.fanout
	}
	for c := r.self*cfg.fanout + 1; c <= r.self*cfg.fanout+cfg.fanout && c < slots.Partitions; c++ {
		r.children = append(r.children, c)
	}
	r.heard = make([]bool, len(r.children))
	if dcs > 1 {
		r.geo = newGeoState(layout, me, env)
	}
	return r, nil
}

// Start arms the periodic timers: gossip (and the geo extension's resends) every stab_interval,
// garbage collection every gc_interval.
func (r *Replica) Start() {
	if r.cfg.gossip != gossipOff && r.slots.Partitions > 1 || r.geo != nil {
		r.env.SetTimer(r.cfg.stabIntervalUs, timerGossip)
	}
	r.env.SetTimer(r.cfg.gcIntervalUs, timerGC)
}

// HandleTimer runs the periodic gossip and garbage collection, and the transaction deadlines.
func (r *Replica) HandleTimer(id protocol.TimerID) {
	switch id {
	case timerGossip:
		r.gossipTick()
		r.env.SetTimer(r.cfg.stabIntervalUs, timerGossip)
	case timerGC:
		r.collect()
		r.env.SetTimer(r.cfg.gcIntervalUs, timerGC)
	case timerDeadline:
		r.deadlines()
	}
}

// HandleRequest serves the client library's reads and writes.
func (r *Replica) HandleRequest(req protocol.Request) {
	if req.Kind != protocol.Operation {
		r.refuse(req, "fastccs serves only its own operations")
		return
	}
	switch op := req.Op.(type) {
	case *MultigetSlice:
		if r.validKeys(op.Keys) && r.validVC(op.VC) {
			r.multigetSlice(req, op)
			return
		}
	case *MultigetSliceByTime:
		if r.validKeys(op.Keys) && r.validVC(op.VC) {
			r.multigetSliceByTime(req, op)
			return
		}
	case *WriteReq:
		if r.validWrite(op) {
			r.batchMutate(req, op)
			return
		}
	case *Cover:
		if r.validVC(op.VC) {
			r.reply(req.Client, req.Seq, &CoverResp{Covered: r.covers(op.VC)})
			return
		}
	}
	r.refuse(req, fmt.Sprintf("malformed request %T for partition %d", req.Op, r.self))
}

func (r *Replica) refuse(req protocol.Request, why string) {
	r.env.Reply(protocol.Reply{Client: req.Client, Seq: req.Seq, Err: "fastccs: " + why})
}

func (r *Replica) reply(client txn.ClientID, seq uint64, op protocol.Message) {
	r.env.Reply(protocol.Reply{Client: client, Seq: seq, Op: op})
}

// validKeys checks that every key lives on this partition.
func (r *Replica) validKeys(keys []string) bool {
	for _, k := range keys {
		if tcc.PartitionOf(k, r.slots.Partitions) != r.self {
			return false
		}
	}
	return true
}

// validVC accepts the zero vector (nil) or a full-length vector of non-negative entries.
func (r *Replica) validVC(v VC) bool {
	if v == nil {
		return true
	}
	return len(v) == r.slots.Len() && !slices.ContainsFunc(v, func(x int64) bool { return x < 0 })
}

func (r *Replica) validWrite(op *WriteReq) bool {
	n := r.slots.Partitions
	return op.Tx != txn.None && len(op.Writes) > 0 && r.validVC(op.VC) &&
		op.Coordinator >= 0 && op.Coordinator < n && op.Size >= 1 && op.Size <= n &&
		(op.Size > 1 || op.Coordinator == r.self) &&
		!slices.ContainsFunc(op.Writes, func(w txn.Write) bool { return tcc.PartitionOf(w.Key, n) != r.self })
}

// covers reports whether this partition holds everything vc names of it: for every datacenter
// d, svc[(d, self)] ≥ vc[(d, self)] (its own commits, and how far it applied d's stream). Only
// then may a client clock that another datacenter built be merged here (I4; spec G1).
func (r *Replica) covers(vc VC) bool {
	for dc := range r.slots.DCs {
		if k := r.slots.Of(dc, r.self); vc != nil && vc[k] > r.svc[k] {
			return false
		}
	}
	return true
}

// mergeClock is svc := max(svc, vc) (Alg. 2 l.5 and l.12 with spec A5's index fix). Every entry
// of a client clock is a confirmed prefix at the partition it names (I4), so this is safe; the
// partition's own entry moves only in the commit queue, whatever a message claims.
func (r *Replica) mergeClock(vc VC) { r.mergeEntries(0, vc) }

// mergeEntries merges values into svc from slot base on, except the entries this partition
// owns: its own, and (geo extension) how far it applied each other datacenter's stream.
func (r *Replica) mergeEntries(base int, values []int64) {
	for i, x := range values {
		r.mergeEntry(base+i, x)
	}
}

func (r *Replica) mergeEntry(k int, x int64) {
	if x > r.svc[k] && k/r.slots.DCs != r.self {
		r.svc[k] = x
		r.svcRaised(k)
	}
}

// newest returns the index in kv.list of key's newest committed version with ct ≤ bound (spec
// A15), or -1 for ⊥.
func (r *Replica) newest(kv *keyVersions, bound VC) int {
	i := len(kv.list) - 1
	for i >= 0 && !kv.list[i].ct.LessEq(bound) {
		i--
	}
	return i
}

// readKeys answers keys from the newest versions under bound. For garbage collection it records
// the access and marks the older versions superseded (a newer one is visible: bound ≤ svc). It
// reports false if a version the answer may need was collected.
func (r *Replica) readKeys(keys []string, bound VC) (vs []KeyVersion, ctm VC, ok bool) {
	vs, ctm = make([]KeyVersion, len(keys)), make(VC, r.slots.Len())
	now := r.env.NowUs()
	for i, k := range keys {
		vs[i].Key = k
		kv := r.keys[k]
		if kv == nil {
			continue
		}
		j := r.newest(kv, bound)
		if kv.collected != (rank{}) && (j < 0 || kv.list[j].rank.less(kv.collected)) {
			return nil, nil, false
		}
		if j < 0 {
			continue
		}
		v := kv.list[j]
		v.lastAccessUs = now
		vs[i].Value, vs[i].Writer, vs[i].CT = v.value, v.writer, v.ct
		ctm.MergeFrom(v.ct)
		for j--; j >= 0 && kv.list[j].supersededAtUs == 0; j-- {
			kv.list[j].supersededAtUs = now
		}
	}
	return vs, ctm, true
}

// multigetSlice is ROT round 1 (Alg. 2 l.2–10): merge the client clock, answer the newest
// versions visible under svc, and return that very svc (spec A16b).
func (r *Replica) multigetSlice(req protocol.Request, op *MultigetSlice) {
	r.mergeClock(op.VC)
	vs, ctm, _ := r.readKeys(op.Keys, r.svc) // never collected: the newest visible version stays
	r.reply(req.Client, req.Seq, &MultigetSliceResp{Versions: vs, CTM: ctm, SVC: r.svc.Clone()})
}

// multigetSliceByTime is ROT round 2 (Alg. 2 l.11–16, plus the reply of spec A6): the newest
// versions with ct ≤ the client's merged clock.
func (r *Replica) multigetSliceByTime(req protocol.Request, op *MultigetSliceByTime) {
	r.mergeClock(op.VC)
	vs, ctm, ok := r.readKeys(op.Keys, op.VC)
	r.reply(req.Client, req.Seq, &MultigetSliceByTimeResp{Versions: vs, CTM: ctm, Collected: !ok})
}

// batchMutate is WOT phase 1 at a participant (Alg. 2 l.17–26): take the next sequence number,
// store the writes as pending versions, and vote (or, at the coordinator, count itself).
// A retried WriteReq (spec A17) finds its transaction pending or decided.
func (r *Replica) batchMutate(req protocol.Request, op *WriteReq) {
	if p, ok := r.pending[op.Tx]; ok {
		p.client, p.seq = req.Client, req.Seq
		return
	}
	if o, ok := r.decided[op.Tx]; ok {
		r.reply(req.Client, req.Seq, o.resp(op.Tx))
		return
	}
	if r.stale(op.Tx) {
		return
	}
	r.maxSeq[op.Tx.Client()] = op.Tx.Seq()
	if r.cfg.mergeOnWrite {
		r.mergeClock(op.VC)
	}
	r.sn++
	tmp := make(VC, r.slots.Len())
	copy(tmp, op.VC)
	tmp[r.slot] = r.sn
	p := &pendingTx{id: op.Tx, sn: r.sn, writes: lastWriteWins(op.Writes), client: req.Client, seq: req.Seq,
		coordinator: op.Coordinator}
	for _, w := range p.writes {
		p.versions = append(p.versions, &version{value: w.Value, writer: op.Tx, ct: tmp})
	}
	r.pending[op.Tx] = p
	if op.Coordinator != r.self {
		r.env.Send(r.nodeOf[op.Coordinator], &Prepared{Tx: op.Tx, SN: r.sn})
		r.arm(p, r.cfg.checkTimeoutUs)
		return
	}
	p.size, p.prepared, p.ct = op.Size, []int{r.self}, tmp.Clone()
	r.arm(p, r.cfg.prepareTimeoutUs)
	votes := r.early[op.Tx]
	delete(r.early, op.Tx)
	r.earlyCount -= len(votes)
	for _, e := range votes {
		r.vote(p, e.from, e.sn)
	}
	r.tryDecide(p)
}

// lastWriteWins keeps one write per key, the last (spec A20), in first-appearance order.
func lastWriteWins(ws []txn.Write) []txn.Write {
	at := make(map[string]int, len(ws))
	out := make([]txn.Write, 0, len(ws))
	for _, w := range ws {
		if i, dup := at[w.Key]; dup {
			out[i] = w
			continue
		}
		at[w.Key] = len(out)
		out = append(out, w)
	}
	return out
}

// stale reports whether tx is unknown here although its client has already moved past it.
func (r *Replica) stale(tx txn.ID) bool {
	seq, ok := r.maxSeq[tx.Client()]
	return ok && tx.Seq() <= seq
}

func (r *Replica) arm(p *pendingTx, afterUs int64) {
	p.deadlineUs = r.env.NowUs() + afterUs
	r.env.SetTimer(afterUs, timerDeadline)
}

// vote records participant from's sequence number at the coordinator (Alg. 2 l.28–29).
func (r *Replica) vote(p *pendingTx, from int, sn int64) {
	if p.final != nil || sn <= 0 || slices.Contains(p.prepared, from) {
		return
	}
	p.ct[r.slots.Of(r.dc, from)] = sn
	p.prepared = append(p.prepared, from)
}

// tryDecide commits at the coordinator once every participant voted (Alg. 2 l.30–34, spec A4):
// the decision is recorded, sent to the participants, and the local commit queued.
func (r *Replica) tryDecide(p *pendingTx) {
	if p.final != nil || len(p.prepared) < p.size {
		return
	}
	r.decided[p.id] = &outcome{committed: true, coordinator: true, ct: p.ct, atUs: r.env.NowUs()}
	for _, q := range p.prepared[1:] {
		r.env.Send(r.nodeOf[q], &Commit{Tx: p.id, CT: p.ct})
	}
	r.enqueue(p, p.ct)
}

// enqueue puts a decided transaction into the in-order commit queue (COMMIT_LOCAL's wait, made
// non-blocking, spec A9) and applies what has become contiguous.
func (r *Replica) enqueue(p *pendingTx, final VC) {
	p.final = final
	r.ready[p.sn] = p
	r.advance()
}

// advance applies the commit queue in sequence-number order while the next number is there:
// a transaction's versions get their final ct and join their keys' lists before svc[i] covers
// them (spec A16a), they are recorded in the store in sn order (in one datacenter, the keys'
// version order), its client's reply leaves only once svc[i] ≥ ct[i] (A9), and with the geo
// extension it is streamed to the other datacenters. A hole just moves svc[i] on.
func (r *Replica) advance() {
	var fresh []*pendingTx
	for {
		sn := r.svc[r.slot] + 1
		p, ok := r.ready[sn]
		if !ok {
			break
		}
		delete(r.ready, sn)
		if p == nil {
			r.svc[r.slot] = sn
			continue
		}
		rk := r.rankOf(p.final, r.dc, sn)
		for i, v := range p.versions {
			v.ct, v.committed, v.rank = p.final, true, rk
			r.install(p.id, p.writes[i].Key, v)
		}
		r.env.Store().Apply(p.id, p.writes)
		delete(r.pending, p.id)
		if p.coordinator != r.self {
			r.decided[p.id] = &outcome{committed: true, atUs: r.env.NowUs()}
		}
		r.svc[r.slot] = sn
		r.reply(p.client, p.seq, r.decided[p.id].resp(p.id))
		r.trackVisibility(p)
		fresh = append(fresh, p)
	}
	if r.geo != nil && len(fresh) > 0 {
		r.stream(fresh)
	}
}

// rankOf is the rank of a version with commit vector ct, committed by the partition of
// datacenter dc under sequence number sn.
func (r *Replica) rankOf(ct VC, dc int, sn int64) rank {
	if r.slots.DCs == 1 {
		return rank{sn}
	}
	sum := int64(0)
	for _, x := range ct {
		sum += x
	}
	return rank{sum, int64(dc), sn}
}

// VersionOrder implements protocol.VersionOrderer: every key's writers ordered by rank, the order
// reads use (in one datacenter, the owner's sequence numbers), from the Disk's record.
func (r *Replica) VersionOrder() map[string][]txn.ID { return r.order.Order() }

// install adds a committed version to its key's list at its rank: at the end, unless the geo
// extension received it late from another datacenter.
func (r *Replica) install(tx txn.ID, key string, v *version) {
	r.order.Add(key, tx, v.rank[:]...)
	kv := r.keys[key]
	if kv == nil {
		kv = &keyVersions{}
		r.keys[key] = kv
	}
	i := len(kv.list)
	for i > 0 && v.rank.less(kv.list[i-1].rank) {
		i--
	}
	kv.list = slices.Insert(kv.list, i, v)
	if len(kv.list) > 1 {
		r.multi[key] = true
	}
}

// resp is the WriteResp a participant sends for a decided transaction.
func (o *outcome) resp(tx txn.ID) *WriteResp {
	return &WriteResp{Tx: tx, Committed: o.committed, CT: o.ct}
}

// abort drops a pending transaction that has not been decided (spec A8): its versions go, its
// sequence number becomes a hole, a tombstone refuses it from now on, and its client learns.
// The coordinator tells the participants that voted.
func (r *Replica) abort(p *pendingTx) {
	delete(r.pending, p.id)
	r.tombstone(p.id)
	if p.coordinator == r.self {
		for _, q := range p.prepared[1:] {
			r.env.Send(r.nodeOf[q], &Abort{Tx: p.id})
		}
	}
	r.reply(p.client, p.seq, &WriteResp{Tx: p.id})
	r.ready[p.sn] = nil
	r.advance()
}

// tombstone records tx as aborted. Votes buffered for it are answered with abort.
func (r *Replica) tombstone(tx txn.ID) {
	r.decided[tx] = &outcome{atUs: r.env.NowUs()}
	if seq, ok := r.maxSeq[tx.Client()]; !ok || tx.Seq() > seq {
		r.maxSeq[tx.Client()] = tx.Seq()
	}
	for _, e := range r.early[tx] {
		r.env.Send(r.nodeOf[e.from], &Abort{Tx: tx})
	}
	r.earlyCount -= len(r.early[tx])
	delete(r.early, tx)
}

// HandleMessage processes a peer partition's message. Messages from outside this datacenter's
// partitions, or that do not fit the receiver's state, are ignored.
func (r *Replica) HandleMessage(from protocol.NodeID, m protocol.Message) {
	fp, ok := r.partOf[from]
	if !ok {
		if r.geo != nil {
			r.onStream(from, m)
			for dc := range r.slots.DCs { // a stream moves this partition's entry of its origin
				r.svcRaised(r.slots.Of(dc, r.self))
			}
		}
		return
	}
	if fp == r.self {
		return
	}
	switch m := m.(type) {
	case *Prepared:
		r.onVote(fp, m.Tx, m.SN, false)
	case *CheckCommit:
		r.onVote(fp, m.Tx, m.SN, true)
	case *Commit:
		if p := r.pending[m.Tx]; p != nil && p.final == nil && p.coordinator == fp &&
			len(m.CT) == r.slots.Len() && m.CT[r.slot] == p.sn && r.validVC(m.CT) {
			r.enqueue(p, m.CT)
		}
	case *Abort:
		r.onAbort(fp, m.Tx)
	case *Gossip:
		r.onGossip(fp, m)
	}
}

// onVote handles a Prepared (Alg. 2 l.27) or a CheckCommit from participant from. A decided
// transaction's outcome is sent again; an unknown one is buffered until its WriteReq arrives
// (spec A4b), unless the participant is asking (check) or the client has moved past it: then it
// is presumed aborted (A8).
func (r *Replica) onVote(from int, tx txn.ID, sn int64, check bool) {
	if o, ok := r.decided[tx]; ok {
		switch {
		case o.coordinator:
			r.env.Send(r.nodeOf[from], &Commit{Tx: tx, CT: o.ct})
		case !o.committed:
			r.env.Send(r.nodeOf[from], &Abort{Tx: tx})
		}
		return
	}
	if p, ok := r.pending[tx]; ok {
		if p.coordinator == r.self {
			r.vote(p, from, sn)
			r.tryDecide(p)
		}
		return
	}
	if check || r.stale(tx) {
		r.tombstone(tx)
		r.env.Send(r.nodeOf[from], &Abort{Tx: tx})
		return
	}
	if r.earlyCount >= maxEarlyVotes || sn <= 0 {
		return
	}
	r.early[tx] = append(r.early[tx], earlyVote{from: from, sn: sn, deadlineUs: r.env.NowUs() + r.cfg.prepareTimeoutUs})
	r.earlyCount++
	r.env.SetTimer(r.cfg.prepareTimeoutUs, timerDeadline)
}

// onAbort handles the coordinator's abort: a pending, undecided transaction aborts; an unknown
// one gets a tombstone, so that its late WriteReq is refused.
func (r *Replica) onAbort(from int, tx txn.ID) {
	if p, ok := r.pending[tx]; ok {
		if p.final == nil && p.coordinator == from {
			r.abort(p)
		}
		return
	}
	if _, ok := r.decided[tx]; !ok {
		r.tombstone(tx)
	}
}

// deadlines handles expired deadlines, in transaction-id order: a coordinator aborts a
// transaction still missing votes after prepare_timeout; a participant asks the coordinator
// (check_commit) every check_timeout until it learns the outcome; stale early votes go.
func (r *Replica) deadlines() {
	now := r.env.NowUs()
	var due []txn.ID
	for id, p := range r.pending {
		if p.final == nil && p.deadlineUs <= now {
			due = append(due, id)
		}
	}
	slices.Sort(due)
	for _, id := range due {
		p := r.pending[id]
		if p.coordinator == r.self {
			r.abort(p)
			continue
		}
		r.env.Send(r.nodeOf[p.coordinator], &CheckCommit{Tx: id, SN: p.sn})
		r.arm(p, r.cfg.checkTimeoutUs)
	}
	for id, votes := range r.early {
		kept := slices.DeleteFunc(votes, func(e earlyVote) bool { return e.deadlineUs <= now })
		r.earlyCount -= len(votes) - len(kept)
		if len(kept) == 0 {
			delete(r.early, id)
		} else {
			r.early[id] = kept
		}
	}
}

// collect is the garbage-collection sweep (spec §2.8, [G-GC]). A committed version is superseded
// when a newer version is first found visible (ct ≤ svc) by a read or by this sweep; it is
// deleted once it has been superseded for longer than tx_timeout plus the clock-skew bound and
// not read for tx_timeout. The newest visible version and those after it (hence the newest
// committed one) are never deleted, and pending versions are not in the lists. Decided outcomes
// are forgotten after (retries+2)×tx_timeout, but a coordinator keeps a commit until it is
// visible here, that is, applied at every participant, so that no participant can still ask.
//
// A deleted version is also dropped from the store (store.Store.Drop), which the network server
// then deletes from its Pebble (store.Store.Changes). The rule is the spec's ([G-GC]): no
// pending or later read can still select the version. Reads select only from this list (a ROT's
// snapshot is at or above a visible version newer than this one, kept as the newest visible; a
// ROT that might have wanted it has not touched it for tx_timeout, so it has timed out and
// retries at a newer snapshot), and the checkpoint names only listed versions, whose values it
// takes back from the store.
func (r *Replica) collect() {
	now := r.env.NowUs()
	for k := range r.multi {
		kv := r.keys[k]
		vis := r.newest(kv, r.svc)
		kept := kv.list[:0]
		for i, v := range kv.list {
			if i < vis && v.supersededAtUs == 0 {
				v.supersededAtUs = now
			}
			if i < vis && now-v.supersededAtUs > r.cfg.txTimeoutUs+r.cfg.skewBoundUs && now-v.lastAccessUs > r.cfg.txTimeoutUs {
				if kv.collected.less(v.rank) {
					kv.collected = v.rank
				}
				r.env.Store().Drop(k, v.writer)
				continue
			}
			kept = append(kept, v)
		}
		clear(kv.list[len(kept):])
		kv.list = kept
		if len(kept) < 2 {
			delete(r.multi, k)
		}
	}
	ttl := int64(r.cfg.retries+2) * r.cfg.txTimeoutUs
	for id, o := range r.decided {
		if now-o.atUs > ttl && (!o.coordinator || o.ct.LessEq(r.svc)) {
			delete(r.decided, id)
		}
	}
}

// gossipTick sends this partition's svc entry to every other partition (spec §2.7), or, in
// tree mode, starts a wave: a leaf reports up, and an inner node or the root that has not sent
// for two periods (a child is slow or its report was lost) sends what it has. With the geo
// extension it first resends unacknowledged replication streams.
func (r *Replica) gossipTick() {
	if r.geo != nil {
		r.resend()
	}
	switch r.cfg.gossip {
	case gossipOff:
		return
	case gossipAll:
		for p, id := range r.nodeOf {
			if p != r.self {
				r.env.Send(id, r.ownEntry())
			}
		}
		return
	}
	if len(r.children) == 0 || r.env.NowUs()-r.lastSentUs >= 2*r.cfg.stabIntervalUs {
		r.sendWave()
	}
}

// ownEntry is the all-to-all gossip message: this partition's svc_i[i] (with the geo extension,
// its entries for every datacenter's partition of its index, which are contiguous).
func (r *Replica) ownEntry() *Gossip {
	base := r.slots.Of(0, r.self)
	return &Gossip{Dir: GossipAll, Base: base, Values: slices.Clone(r.svc[base : base+r.slots.DCs])}
}

// sendWave sends svc up to the parent, or, at the root, down to the children.
func (r *Replica) sendWave() {
	r.lastSentUs = r.env.NowUs()
	clear(r.heard)
	r.heardCount = 0
	if r.parent >= 0 {
		r.env.Send(r.nodeOf[r.parent], r.treeUpdate(&r.up, GossipUp))
		return
	}
	r.sendDown()
}

func (r *Replica) sendDown() {
	m := r.treeUpdate(&r.down, GossipDown)
	for _, c := range r.children {
		r.env.Send(r.nodeOf[c], m)
	}
}

// fullTreeUpdateEvery makes every 16th tree update in each direction carry the whole vector, so
// that an update lost on the way is repaired (sparse updates carry only what changed).
const fullTreeUpdateEvery = 16

// treeLink is what a partition last sent up (or down) the gossip tree.
type treeLink struct {
	sent    VC
	updates int
}

// treeUpdate builds the next tree message over l: the whole svc every fullTreeUpdateEvery
// updates, else the entries that grew since the previous one (a few, where the whole vector
// would be N entries per message and 2(N−1) messages per period).
func (r *Replica) treeUpdate(l *treeLink, dir uint8) *Gossip {
	l.updates++
	if l.sent == nil || l.updates%fullTreeUpdateEvery == 0 {
		l.sent = r.svc.Clone()
		return &Gossip{Dir: dir, Values: r.svc.Clone()}
	}
	m := &Gossip{Dir: dir}
	for k, x := range r.svc {
		if x > l.sent[k] {
			m.Slots, m.Values = append(m.Slots, k), append(m.Values, x)
			l.sent[k] = x
		}
	}
	return m
}

// onGossip merges received entries (svc_j[k] := max(svc_j[k], value)). In tree mode a node
// reports up once every child has reported, and passes a wave from the root straight down.
func (r *Replica) onGossip(from int, m *Gossip) {
	switch {
	case m.Slots == nil && m.Base >= 0 && m.Base+len(m.Values) <= r.slots.Len():
		r.mergeEntries(m.Base, m.Values)
	case m.Slots != nil && len(m.Slots) == len(m.Values) && m.Base == 0:
		for i, k := range m.Slots {
			if k >= 0 && k < r.slots.Len() {
				r.mergeEntry(k, m.Values[i])
			}
		}
	default:
		return
	}
	switch {
	case m.Dir == GossipDown && from == r.parent:
		r.sendDown()
	case m.Dir == GossipUp:
		i := slices.Index(r.children, from)
		if i < 0 || r.heard[i] {
			return
		}
		r.heard[i] = true
		if r.heardCount++; r.heardCount == len(r.children) {
			r.sendWave()
		}
	}
}

// ---------- visibility lag (tcc.VisibilityReporter) ----------

// maxVisWaiting bounds the committed WOTs a partition tracks until they are visible. A WOT
// committed while that many wait (gossip is off and no client clock helps, say) is counted as
// dropped instead.
const maxVisWaiting = 1 << 16

// DrainVisibility implements tcc.VisibilityReporter: per WOT committed here (in this
// datacenter; versions the geo extension replicates from elsewhere are not tracked), the local
// commit (the commit queue applying it, svc[i] ≥ ct[i]) and the moment ct ≤ svc. The first
// call turns tracking on.
func (r *Replica) DrainVisibility(dst []tcc.Visibility) ([]tcc.Visibility, int) {
	return r.vis.Drain(dst)
}

// visPending is a WOT committed here and not yet visible: blocked counts the slots k with
// svc[k] < ct[k].
type visPending struct {
	ev      tcc.Visibility
	blocked int
}

// trackVisibility starts measuring p's visibility lag at its local commit, svc[i] having just
// moved to p's sequence number: p waits at every slot that does not cover its ct yet, or is
// visible at once.
func (r *Replica) trackVisibility(p *pendingTx) {
	if !r.vis.On() {
		return
	}
	if r.visWaiting >= maxVisWaiting {
		r.vis.Drop()
		return
	}
	now := r.env.NowUs()
	w := &visPending{ev: tcc.Visibility{Tx: p.id, CommitUs: now}}
	if p.coordinator == r.self {
		w.ev.Participants, w.ev.DecidedUs = p.size, r.decided[p.id].atUs
	}
	for k, x := range p.final {
		if x > r.svc[k] {
			if r.visWait == nil {
				r.visWait = make([]tcc.Waiting[*visPending], len(r.svc))
			}
			r.visWait[k].Add(x, w)
			w.blocked++
		}
	}
	if w.blocked == 0 {
		w.ev.VisibleUs = now
		r.vis.Record(w.ev)
		return
	}
	r.visWaiting++
}

// svcRaised records the WOTs that svc[k]'s growth made visible.
func (r *Replica) svcRaised(k int) {
	if r.visWait == nil {
		return
	}
	r.visWait[k].Release(r.svc[k], func(w *visPending) {
		if w.blocked--; w.blocked == 0 {
			r.visWaiting--
			w.ev.VisibleUs = r.env.NowUs()
			r.vis.Record(w.ev)
		}
	})
}
