// Package eiger implements Eiger (Lloyd et al., NSDI'13) as the FastCCS thesis evaluates it
// (spec fastccs-tcc.md §3.2): a partitioned store in one datacenter with transactional causal
// consistency, read-only transactions (ROTs) of up to three rounds and write-only transactions
// (WOTs) committed by a two-phase commit that the client drives. Where the thesis is silent the
// package follows the Eiger paper, as the spec's [RESOLUTION E2] says.
//
// Time is logical. Every partition keeps a Lamport clock L and every client one too; a partition
// advances L at every request (past the request's clock if it carries one: writes always do,
// ROT requests with param read_clock, the default) and answers carry L back. A committed version is
// valid from its commit time (its earliest valid time, EVT) until the next version's commit
// time; the current version is valid at least up to L, because a write prepared later gets a
// prepare time above L and commits no earlier.
//
// ROT (client.go). Round 1 reads every key's current version with its interval [EVT, LVT = L].
// A key with a pending (prepared, undecided) write cannot be vouched for, since that write may
// commit at any time from its prepare time on; the partition then answers with its clock alone
// (the paper's "special empty response"). If the intervals share a point the ROT is done in one
// round. Otherwise the client picks the effective time EffT = the largest EVT (or empty answer's
// LVT) [RESOLUTION E1], raised to the client's dependency time when reads carry no clock (below),
// and reads again, by time, every key whose interval does not reach EffT and every empty one. A partition serving a read by time raises L to EffT (later writes commit
// after it) and returns each key's version valid at EffT, but first resolves every pending write
// of those keys prepared at or before EffT: if it coordinates the write it promises itself a
// commit time above EffT; otherwise it sends a commit check (the third round) to the write's
// coordinator, which answers with the commit time, the abort, or, while undecided, the promise
// that the commit time will exceed EffT. ReadReply.CommitChecks counts the checks; a ROT whose
// round 2 needed one reports three rounds.
//
// WOT (client.go, this file). The client picks a coordinator among the participants (uniformly,
// with its seeded PRNG; spec A14) and sends every participant its writes directly. A participant
// prepares at its Lamport time (the writes are pending, invisible) and votes to the coordinator;
// the coordinator commits at ct = the largest vote (and above every EffT it promised), installs
// its writes, answers the client and sends Commit to the others [RESOLUTION E2: the client's
// answer comes right after the coordinator's local commit]. A participant installs the writes
// when the commit reaches it (they are visible at once; no stabilization) and acknowledges. Each
// key's versions are ordered by commit time, ties broken by transaction id; commits reach a
// partition out of that order, so the replica is a protocol.VersionOrderer.
//
// The client's dependency list (spec E3) is the list of versions it read since its last write,
// deduplicated by a linear scan (the cost grows with the list, as in Eiger's client), attached to
// its next WOT's coordinator request (WriteReq.SizeBytes grows with it) and collapsed to that
// write once it commits. Its servers never consume it in one datacenter (Eiger checks
// dependencies only when it replicates a WOT to another datacenter); the client does, through
// its dependency time, the largest EVT in the list (below).
//
// Two readings of Eiger (param reading). By default (reading=spec) Eiger runs as spec
// fastccs-tcc.md §3.2 prescribes: every version carries its own validity interval (EVT its
// commit time) and every ROT request carries the client's Lamport clock, which the partition
// advances past before it reads, as the Eiger paper and code do. reading=thesis follows the
// thesis's text instead (§2.4.4): a key's EVT is the partition's clock at its latest commit
// ("EVT is the partition's logical time when it committed the last visible operation";
// param partition_evt) and reads carry no client clock ("each client is responsible for
// maintaining its causal history"; param read_clock=false). The two params may also be set
// one by one. Which reading the thesis's measurements match is measured, not assumed:
// docs/REPRODUCTION.md (tcc-e1, tcc-e10) runs both. In short, only the thesis's reading gives
// the thesis's 20–50% of Eiger ROTs needing a second round and rounds rising with the
// partitions; under the spec's reading Eiger's first rounds almost never conflict on the
// thesis's large key spaces and it matches FastCCS's throughput.
//
// Reads and the client's clock. A ROT must return a snapshot that contains the session's past:
// its own writes, the versions it read, and their causal pasts. Commit times respect causality
// (a WOT carries its client's clock, which is at least every time the client has seen, so it
// commits after everything in its past), so a snapshot at a time t ≥ D, D the largest commit
// time in the session's past, is enough. With read_clock the partition advances past the
// client's clock, so every LVT, and thus EffT, exceeds everything the client has seen. Without
// it a partition's clock may lag the session's past, and a ROT could miss it: the client's own
// write still pending at a slower participant answers with an LVT below the write's commit
// time, a read by time at that LVT finds, through the commit check, that the write committed
// later, and returns the previous version (eiger's TestEigerReadYourWritesWithoutClock,
// message by message). So a client without read_clock keeps its dependency time D, the largest
// EVT in its dependency list (the EVT its answers gave for the versions it read; its writes'
// commit times), and checks round 1 against it as against one more EVT: EffT ≥ D, and a key
// whose LVT is below D, or pending, is read again at EffT. This is the thesis's "explicit
// check" (Table 2.1), costs no byte on the wire, and is exact: a snapshot at EffT ≥ D holds
// every version in the session's past. Evidence: the 200-seed swarm with read_clock drawn and
// again with it off, TestEigerSessionGuarantees (read-your-writes, monotonic reads,
// writes-follow-reads across sessions on 8 keys) under the TCC checker; without the check
// (param unsafe_skip_dep_check, deliberately broken) the checker finds C2 anomalies in 15 of
// 40 swarm seeds and 11 of 200 session seeds.
//
// Why the thesis's reading makes more second rounds: without the client's clock a partition's
// clock advances only with its own requests and commits, so the fewer requests each partition
// serves, the further the partitions' clocks, and the dependency times of clients that saw
// busier ones, drift apart; and a partition-wide EVT conflicts with every other partition's
// LVT as soon as that partition committed anything recently, whatever key was read.
//
// Faults (spec A8, A17). Lost messages never break safety: a version becomes visible only with
// its final commit time. Liveness comes from timeouts, all param tx_timeout: the client restarts
// a ROT and resends a WOT with the same transaction id (partitions deduplicate by id); a
// coordinator still missing votes aborts, records a tombstone and tells the participants; a
// participant holding a write pending asks the coordinator (a Check with EffTime 0), and a
// coordinator that never heard of the transaction presumes it aborted and records a tombstone, so
// that a late request is refused. Commits are retransmitted until acknowledged. A read by time
// waiting for commit checks gives up after tx_timeout and asks the client to retry.
//
// Choices where both the thesis and the paper are silent:
//
//   - A commit check for a transaction the coordinator has not yet received (the client's request
//     to the coordinator is slower than a read at another participant) records the promised
//     floor, applied when the request arrives, instead of aborting the transaction.
//   - Partitions other than the coordinator answer a WriteReq at once with Prepared, so that every
//     client call gets exactly one answer; the client waits only for the coordinator's.
//   - Decided transactions (outcomes and tombstones) are remembered for the life of the replica,
//     like the store keeps every version; runs are bounded.
//   - Garbage collection ([RESOLUTION G-GC], spec §2.8) drops the value of a version that has
//     been superseded (by commit-time order) for longer than tx_timeout plus clock_skew_bound and
//     not read for tx_timeout; its metadata stays, so reads by time stay exact, and one that
//     needs a collected value answers Retry. Once no commit can land among them (they are older
//     than every prepare time pending here and the clock), consecutive collected versions merge
//     into the first, which answers the same reads; the checker's version order is kept on the
//     replica's Disk (tcc.VersionLog), so checkpoints hold live versions and such runs only.
//   - Clock granularity. As in Eiger's code (wlloyd/eiger: CassandraServer.multiget_slice,
//     ClientLibrary, LamportClock), a partition advances past a request's clock before it
//     reads (when the request carries one), a current version's LVT is the partition's clock,
//     and the client takes the clock of every answer. Eiger's code also ticks at every
//     sub-event (each LVT it hands out, each reply and peer message, prepare and commit) and
//     commits at the coordinator's clock once the votes are in; here a partition ticks once per
//     request and is raised to commit times and effective times, and a WOT commits at the
//     largest vote (spec §3.2). Both keep every interval valid. What the extra ticks change
//     is not measured: no param selects them (REPRODUCTION.md, tcc-e10).
//   - The deployment must be one datacenter: Eiger's replicated WOTs are not part of the
//     thesis's evaluation (spec §3.2).
package eiger

import (
	"fmt"
	"math"
	"slices"

	"github.com/meridian-kv/meridian/protocol"
	"github.com/meridian-kv/meridian/protocol/txn"
	"github.com/meridian-kv/meridian/protocols/registry"
	"github.com/meridian-kv/meridian/protocols/tcc"
)

func init() {
	registry.Register("eiger", registry.Entry{
		Family:      registry.Causal,
		Description: "Eiger (NSDI'13): Lamport validity intervals, ROTs of up to 3 rounds (commit checks), client-driven 2PC WOTs",
		New:         New,
		Codec:       Codec,
		NewClient:   NewClient,
		// Rounds 1 and 2 return values; a commit check is the third (spec §3.4, Table 2.1).
		MaxReadRounds:   3,
		VisibleOnCommit: true,
		RandomParams:    randomParams,
	})
}

// Parameter names Eiger accepts (replicas and clients alike).
const (
	// ParamTxTimeout is the transaction timeout (default 5s, Eiger's): the client restarts a ROT
	// and resends a WOT after it; a coordinator missing votes aborts; a participant holding a
	// pending write asks its coordinator; a read by time stops waiting for commit checks; and it
	// is the garbage-collection window.
	ParamTxTimeout = "tx_timeout"
	// ParamRetransmitInterval is the replica's housekeeping period (default 100ms): commit
	// retransmission and the timeouts above are checked at this granularity.
	ParamRetransmitInterval = "retransmit_interval"
	// ParamGCInterval is the period of the garbage-collection sweep (default 1s, spec A18).
	ParamGCInterval = "gc_interval"
	// ParamClockSkewBound bounds the skew between partitions' physical clocks (default 0), added
	// to the garbage-collection window.
	ParamClockSkewBound = "clock_skew_bound"
	// ParamReading selects which description of Eiger the defaults of partition_evt and
	// read_clock follow: ReadingSpec (the default) or ReadingThesis. See "Two readings of
	// Eiger" in the package comment.
	ParamReading = "reading"
	// ParamPartitionEVT makes round 1 report as every key's EVT the partition's clock at its
	// latest commit: the thesis's reading of Eiger ("EVT is the partition's logical time when it
	// committed the last visible operation", §2.4.4). Default: false under reading=spec, whose
	// per-version intervals (the Eiger paper's, spec §3.2) report a version's own commit time;
	// true under reading=thesis. It narrows each interval to a sub-interval of the true one, so
	// it is safe either way.
	ParamPartitionEVT = "partition_evt"
	// ParamReadClock makes every ROT request carry the client's Lamport clock, which the
	// partition advances past before it reads (spec §3.2 round 1: "server advances L past the
	// request's clock", as Eiger's code does). Default: true under reading=spec, false under
	// reading=thesis (partitions return value, EVT and LVT; the client keeps its causal
	// history), where the client checks round 1 against its dependency time (the largest EVT in
	// its dependency list) instead. See "Reads and the client's clock" in the package comment.
	ParamReadClock = "read_clock"
	// ParamUnsafeSkipDepCheck (default false) makes a client whose reads carry no clock skip
	// the dependency-time check, so that a ROT may return a snapshot older than the session's
	// own past. It is deliberately broken: tests use it to show that the checker catches the
	// anomalies the check prevents. Never set it otherwise.
	ParamUnsafeSkipDepCheck = "unsafe_skip_dep_check"
)

// The values of ParamReading.
const (
	// ReadingSpec is Eiger as spec fastccs-tcc.md §3.2 prescribes: per-version validity
	// intervals (partition_evt=false) and reads that carry the client's clock (read_clock=true).
	ReadingSpec = "spec"
	// ReadingThesis is Eiger as the thesis's text describes it (§2.4.4): the partition's clock
	// at its latest commit as every key's EVT (partition_evt=true) and reads without the
	// client's clock (read_clock=false).
	ReadingThesis = "thesis"
)

var paramNames = []string{ParamTxTimeout, ParamReading, ParamRetransmitInterval, ParamGCInterval, ParamClockSkewBound,
	ParamPartitionEVT, ParamReadClock, ParamUnsafeSkipDepCheck}

// params are the parsed parameters.
type params struct {
	txTimeoutUs, retransmitUs, gcIntervalUs, skewUs int64
	partitionEVT, readClock, skipDepCheck           bool
}

func parseParams(p protocol.Params) (params, error) {
	var out params
	if err := p.CheckKnown(paramNames, nil); err != nil {
		return out, fmt.Errorf("eiger: %w", err)
	}
	for _, f := range []struct {
		name  string
		dst   *int64
		defUs int64
		minUs int64
	}{
		{ParamTxTimeout, &out.txTimeoutUs, 5_000_000, 1},
		{ParamRetransmitInterval, &out.retransmitUs, 100_000, 1},
		{ParamGCInterval, &out.gcIntervalUs, 1_000_000, 1},
		{ParamClockSkewBound, &out.skewUs, 0, 0},
	} {
		v, err := p.Duration(f.name, f.defUs)
		if err != nil {
			return out, fmt.Errorf("eiger: %w", err)
		}
		if v < f.minUs {
			return out, fmt.Errorf("eiger: parameter %s: %dµs is too small", f.name, v)
		}
		*f.dst = v
	}
	thesis := false
	switch reading := p[ParamReading]; reading {
	case "", ReadingSpec:
	case ReadingThesis:
		thesis = true
	default:
		return out, fmt.Errorf("eiger: parameter %s: %q is neither %q nor %q", ParamReading, reading, ReadingSpec, ReadingThesis)
	}
	var err error
	for _, f := range []struct {
		name string
		dst  *bool
		def  bool
	}{
		{ParamPartitionEVT, &out.partitionEVT, thesis},
		{ParamReadClock, &out.readClock, !thesis},
		{ParamUnsafeSkipDepCheck, &out.skipDepCheck, false},
	} {
		if *f.dst, err = p.Bool(f.name, f.def); err != nil {
			return out, fmt.Errorf("eiger: %w", err)
		}
	}
	return out, nil
}

// layoutOf checks that nodes form one datacenter of partitions and returns them by partition.
func layoutOf(nodes []protocol.Node) ([]protocol.NodeID, error) {
	dcs := 0
	for _, nd := range nodes {
		dcs = max(dcs, nd.DC+1)
	}
	l, err := tcc.NewLayout(nodes, dcs)
	if err != nil {
		return nil, fmt.Errorf("eiger: %w", err)
	}
	if len(l.Node) != 1 {
		return nil, fmt.Errorf("eiger: runs in one datacenter, got %d (replicated write-only transactions are not part of the thesis's evaluation)", len(l.Node))
	}
	return l.Node[0], nil
}

const timerTick protocol.TimerID = 1

// version is one committed version of a key.
type version struct {
	writer       txn.ID
	value        []byte
	ct           int64 // commit time: the EVT
	supersededUs int64 // local time a newer version (by commit order) was installed; 0 while newest
	lastReadUs   int64 // local time it was installed or last returned by a read
	collected    bool  // garbage-collected: the value is gone, the metadata stays
}

// before orders versions by commit time, then writer id.
func (v *version) before(ct int64, writer txn.ID) bool {
	return v.ct < ct || v.ct == ct && v.writer < writer
}

// keyState is one key at its partition: committed versions in version order and the pending
// writes to it, in arrival order.
type keyState struct {
	versions []version
	pending  []txn.ID
}

// at returns the index of the version valid at time t (the last with ct ≤ t), or -1 for the
// initial version.
func (k *keyState) at(t int64) int {
	i, _ := slices.BinarySearchFunc(k.versions, t, func(v version, t int64) int {
		if v.ct <= t {
			return -1
		}
		return 1
	})
	return i - 1
}

// pendingTx is a WOT prepared here and not yet decided here.
type pendingTx struct {
	id     txn.ID
	writes []txn.Write
	pt     int64 // prepare time here
	// floor: the commit time is known to exceed it (promised by the coordinator to a check).
	floor int64
	coord protocol.NodeID
	// At a participant other than the coordinator: when to ask the coordinator.
	checkUs int64
	// At the coordinator.
	participants []protocol.NodeID
	votes        map[protocol.NodeID]int64
	deadlineUs   int64
	waiters      []protocol.Request // client requests to answer with the outcome
}

// decision is the outcome of a transaction, as known here.
type decision struct {
	committed bool
	ct        int64
}

// unacked is a committed transaction whose Commit some participants have not acknowledged.
type unacked struct {
	ct     int64
	nodes  []protocol.NodeID
	nextUs int64
}

// parkedRead is a ReadByTime waiting for pending writes of its keys to be resolved.
type parkedRead struct {
	req       protocol.Request
	m         *ReadByTime
	asked     map[txn.ID]bool // commit checks sent
	checks    int
	expiresUs int64
}

// Replica is one Eiger partition.
type Replica struct {
	env       protocol.Env
	self      protocol.NodeID
	partition int
	nodes     []protocol.NodeID // partition → node
	p         params

	clock int64 // the Lamport clock L
	// commitClock is the clock right after the latest commit here (param partition_evt).
	commitClock int64
	keys        map[string]*keyState
	pending     map[txn.ID]*pendingTx
	decided     map[txn.ID]decision
	// Coordinator: what arrived for transactions before their request did.
	earlyVotes  map[txn.ID]map[protocol.NodeID]int64
	earlyFloors map[txn.ID]int64
	unacked     map[txn.ID]*unacked
	parked      []*parkedRead
	gcKeys      map[string]bool // keys with more than one uncollected version
	nextGCUs    int64
	// order is every version ever committed here, by commit time then writer: the checker's
	// order, on the replica's Disk (outside its checkpoints), since collection merges old
	// versions (keyState.compact).
	order *tcc.VersionLog
}

// PrunesStore implements protocol.StorePruner: collect drops versions from the store.
func (r *Replica) PrunesStore() {}

// New builds an Eiger partition. Every node of cfg must be in one datacenter.
func New(cfg protocol.Config, env protocol.Env) (protocol.Replica, error) {
	p, err := parseParams(cfg.Params)
	if err != nil {
		return nil, err
	}
	nodes, err := layoutOf(cfg.Nodes)
	if err != nil {
		return nil, err
	}
	if int(cfg.Self) < 0 || int(cfg.Self) >= len(cfg.Nodes) {
		return nil, fmt.Errorf("eiger: self node %d out of range", cfg.Self)
	}
	return &Replica{
		env: env, self: cfg.Self, partition: cfg.Nodes[cfg.Self].Partition, nodes: nodes, p: p,
		keys: map[string]*keyState{}, pending: map[txn.ID]*pendingTx{}, decided: map[txn.ID]decision{},
		earlyVotes: map[txn.ID]map[protocol.NodeID]int64{}, earlyFloors: map[txn.ID]int64{},
		unacked: map[txn.ID]*unacked{}, gcKeys: map[string]bool{}, order: tcc.NewVersionLog(env),
	}, nil
}

// Start arms the housekeeping timer.
func (r *Replica) Start() {
	r.nextGCUs = r.env.NowUs() + r.p.gcIntervalUs
	r.env.SetTimer(r.p.retransmitUs, timerTick)
}

// VersionOrder returns every written key's committed versions in version order (commit time,
// then transaction id), collected ones included.
func (r *Replica) VersionOrder() map[string][]txn.ID { return r.order.Order() }

func (r *Replica) key(k string) *keyState {
	ks := r.keys[k]
	if ks == nil {
		ks = &keyState{}
		r.keys[k] = ks
	}
	return ks
}

func (r *Replica) reply(req protocol.Request, m protocol.Message) {
	r.env.Reply(protocol.Reply{Client: req.Client, Seq: req.Seq, Op: m})
}

func (r *Replica) refuse(req protocol.Request, format string, args ...any) {
	r.env.Reply(protocol.Reply{Client: req.Client, Seq: req.Seq, Err: "eiger: " + fmt.Sprintf(format, args...)})
}

// ownKeys checks that every key is this partition's.
func (r *Replica) ownKeys(keys []string) bool {
	for _, k := range keys {
		if tcc.PartitionOf(k, len(r.nodes)) != r.partition {
			return false
		}
	}
	return true
}

// maxTime bounds the Lamport times a replica accepts from clients and peers, so that advancing
// the clock past one can never overflow; larger ones make a message malformed.
const maxTime = math.MaxInt64 / 4

func validTime(ts ...int64) bool {
	for _, t := range ts {
		if t < 0 || t > maxTime {
			return false
		}
	}
	return true
}

// receive advances the Lamport clock past a client request's time t (every request is an event;
// the Eiger paper's servers advance past the request's clock).
func (r *Replica) receive(t int64) { r.clock = max(r.clock, t) + 1 }

// HandleRequest serves the client library's requests.
func (r *Replica) HandleRequest(req protocol.Request) {
	if req.Kind != protocol.Operation {
		r.refuse(req, "only Operation requests are served")
		return
	}
	switch m := req.Op.(type) {
	case *Read:
		if m == nil || !r.ownKeys(m.Keys) || !validTime(m.Clock) {
			break
		}
		r.read(req, m)
		return
	case *ReadByTime:
		if m == nil || !r.ownKeys(m.Keys) || !validTime(m.Clock, m.EffTime) {
			break
		}
		r.readByTime(req, m)
		return
	case *WriteReq:
		if m == nil || !r.wellFormedWrite(m) {
			break
		}
		r.write(req, m)
		return
	}
	r.refuse(req, "malformed request %T", req.Op)
}

// read serves round 1: each key's current version, valid from its EVT to the clock, or an empty
// answer for a key with a pending write.
func (r *Replica) read(req protocol.Request, m *Read) {
	r.receive(m.Clock)
	now := r.env.NowUs()
	reads := make([]KeyRead, len(m.Keys))
	for i, k := range m.Keys {
		reads[i] = KeyRead{Key: k, LVT: r.clock}
		ks := r.keys[k]
		switch {
		case ks != nil && len(ks.pending) > 0:
			reads[i].Pending = true
			continue
		case ks != nil && len(ks.versions) > 0:
			v := &ks.versions[len(ks.versions)-1]
			v.lastReadUs = now
			reads[i].Value, reads[i].Writer, reads[i].EVT = v.value, v.writer, v.ct
		}
		if r.p.partitionEVT {
			reads[i].EVT = max(reads[i].EVT, r.commitClock)
		}
	}
	r.reply(req, &ReadReply{Reads: reads, Clock: r.clock})
}

// readByTime serves round 2, after resolving the pending writes that could commit at or before
// EffTime.
func (r *Replica) readByTime(req protocol.Request, m *ReadByTime) {
	r.receive(max(m.Clock, m.EffTime))
	pr := &parkedRead{req: req, m: m, asked: map[txn.ID]bool{}, expiresUs: r.env.NowUs() + r.p.txTimeoutUs}
	if !r.tryAnswer(pr) {
		r.parked = append(r.parked, pr)
	}
}

// tryAnswer answers pr if no pending write of its keys could commit at or before its EffTime,
// and otherwise sends the commit checks it still needs. It reports whether pr was answered.
func (r *Replica) tryAnswer(pr *parkedRead) bool {
	effT, blocked := pr.m.EffTime, false
	for _, k := range pr.m.Keys {
		ks := r.keys[k]
		if ks == nil {
			continue
		}
		for _, id := range ks.pending {
			p := r.pending[id]
			if p.pt > effT || p.floor >= effT {
				continue // it commits, if ever, after EffTime
			}
			if p.coord == r.self {
				p.floor = effT // a local commit check: our own commit time will exceed EffTime
				continue
			}
			blocked = true
			if !pr.asked[id] {
				pr.asked[id] = true
				pr.checks++
				r.env.Send(p.coord, &Check{Txn: id, EffTime: effT})
			}
		}
	}
	if blocked {
		return false
	}
	now := r.env.NowUs()
	reads := make([]KeyRead, len(pr.m.Keys))
	for i, k := range pr.m.Keys {
		reads[i].Key = k
		ks := r.keys[k]
		if ks == nil {
			continue
		}
		j := ks.at(effT)
		if j < 0 {
			continue
		}
		v := &ks.versions[j]
		if v.collected {
			r.reply(pr.req, &ReadReply{Clock: r.clock, CommitChecks: pr.checks, Retry: true})
			return true
		}
		v.lastReadUs = now
		reads[i].Value, reads[i].Writer, reads[i].EVT = v.value, v.writer, v.ct
	}
	r.reply(pr.req, &ReadReply{Reads: reads, Clock: r.clock, CommitChecks: pr.checks})
	return true
}

// resolveParked answers the parked reads that no longer wait.
func (r *Replica) resolveParked() {
	kept := r.parked[:0]
	for _, pr := range r.parked {
		if !r.tryAnswer(pr) {
			kept = append(kept, pr)
		}
	}
	clear(r.parked[len(kept):])
	r.parked = kept
}

func (r *Replica) wellFormedWrite(m *WriteReq) bool {
	if len(m.Writes) == 0 || !validTime(m.Clock) || !r.isNode(m.Coordinator) {
		return false
	}
	for i, w := range m.Writes {
		if tcc.PartitionOf(w.Key, len(r.nodes)) != r.partition {
			return false
		}
		for _, o := range m.Writes[:i] {
			if o.Key == w.Key {
				return false
			}
		}
	}
	if m.Coordinator != r.self {
		return len(m.Participants) == 0
	}
	if len(m.Participants) > len(r.nodes) || !slices.Contains(m.Participants, r.self) {
		return false
	}
	for i, n := range m.Participants {
		if !r.isNode(n) || slices.Contains(m.Participants[:i], n) {
			return false
		}
	}
	return true
}

func (r *Replica) isNode(n protocol.NodeID) bool { return slices.Contains(r.nodes, n) }

// write prepares a participant's share of a WOT, or answers a retry of one.
func (r *Replica) write(req protocol.Request, m *WriteReq) {
	r.receive(m.Clock)
	coord := m.Coordinator == r.self
	if d, ok := r.decided[m.Txn]; ok {
		rep := &WriteReply{Txn: m.Txn, Status: Prepared, Clock: r.clock}
		switch {
		case !d.committed:
			rep.Status = Aborted
		case coord:
			rep.Status, rep.CommitTime = Committed, d.ct
		}
		r.reply(req, rep)
		return
	}
	if p := r.pending[m.Txn]; p != nil {
		if p.coord == r.self {
			p.waiters = append(p.waiters, req)
			return
		}
		r.env.Send(p.coord, &Vote{Txn: p.id, PrepareTime: p.pt}) // the first vote may be lost
		r.reply(req, &WriteReply{Txn: m.Txn, Status: Prepared, Clock: r.clock})
		return
	}
	now := r.env.NowUs()
	p := &pendingTx{id: m.Txn, writes: m.Writes, pt: r.clock, coord: m.Coordinator}
	r.pending[p.id] = p
	for _, w := range m.Writes {
		ks := r.key(w.Key)
		ks.pending = append(ks.pending, p.id)
	}
	if !coord {
		p.checkUs = now + r.p.txTimeoutUs
		r.env.Send(p.coord, &Vote{Txn: p.id, PrepareTime: p.pt})
		r.reply(req, &WriteReply{Txn: m.Txn, Status: Prepared, Clock: r.clock})
		return
	}
	p.participants, p.deadlineUs, p.waiters = m.Participants, now+r.p.txTimeoutUs, []protocol.Request{req}
	p.votes = map[protocol.NodeID]int64{r.self: p.pt}
	for n, pt := range r.earlyVotes[p.id] {
		if slices.Contains(p.participants, n) {
			p.votes[n] = pt
		}
	}
	p.floor = r.earlyFloors[p.id]
	delete(r.earlyVotes, p.id)
	delete(r.earlyFloors, p.id)
	r.tryDecide(p)
}

// tryDecide commits p, which this replica coordinates, once every participant voted: at the
// largest prepare time, above every floor promised to commit checks.
func (r *Replica) tryDecide(p *pendingTx) {
	if len(p.votes) < len(p.participants) {
		return
	}
	ct := p.floor + 1
	for _, pt := range p.votes {
		ct = max(ct, pt)
	}
	var others []protocol.NodeID
	for _, n := range p.participants {
		if n != r.self {
			others = append(others, n)
			r.env.Send(n, &Commit{Txn: p.id, CommitTime: ct})
		}
	}
	if len(others) > 0 {
		r.unacked[p.id] = &unacked{ct: ct, nodes: others, nextUs: r.env.NowUs() + r.p.retransmitUs}
	}
	waiters := p.waiters
	r.commit(p, ct)
	for _, w := range waiters {
		r.reply(w, &WriteReply{Txn: p.id, Status: Committed, CommitTime: ct, Clock: r.clock})
	}
}

// unpend removes p's pending writes and records its outcome.
func (r *Replica) unpend(p *pendingTx, d decision) {
	delete(r.pending, p.id)
	r.decided[p.id] = d
	for _, w := range p.writes {
		ks := r.keys[w.Key]
		ks.pending = slices.DeleteFunc(ks.pending, func(id txn.ID) bool { return id == p.id })
	}
}

// commit installs p's writes at commit time ct: they are visible at once.
func (r *Replica) commit(p *pendingTx, ct int64) {
	r.unpend(p, decision{committed: true, ct: ct})
	r.clock = max(r.clock, ct)
	r.commitClock = r.clock
	now := r.env.NowUs()
	for _, w := range p.writes {
		ks := r.keys[w.Key]
		v := version{writer: p.id, value: w.Value, ct: ct, lastReadUs: now}
		i := len(ks.versions)
		for i > 0 && !ks.versions[i-1].before(ct, p.id) {
			i--
		}
		if i < len(ks.versions) {
			v.supersededUs = now // installed behind a newer version
		} else if i > 0 {
			ks.versions[i-1].supersededUs = now
		}
		ks.versions = slices.Insert(ks.versions, i, v)
		if len(ks.versions) > 1 {
			r.gcKeys[w.Key] = true
		}
		r.order.Add(w.Key, p.id, ct)
	}
	r.env.Store().Apply(p.id, p.writes)
	r.resolveParked()
}

// abort drops p's pending writes.
func (r *Replica) abort(p *pendingTx) {
	r.unpend(p, decision{})
	r.resolveParked()
}

// abortAsCoordinator aborts p, which this replica coordinates, and tells everyone.
func (r *Replica) abortAsCoordinator(p *pendingTx) {
	for _, n := range p.participants {
		if n != r.self {
			r.env.Send(n, &Abort{Txn: p.id})
		}
	}
	waiters := p.waiters
	r.abort(p)
	for _, w := range waiters {
		r.reply(w, &WriteReply{Txn: p.id, Status: Aborted, Clock: r.clock})
	}
}

// presumeAborted records a tombstone for a transaction this coordinator never received.
func (r *Replica) presumeAborted(id txn.ID) {
	r.decided[id] = decision{}
	delete(r.earlyVotes, id)
	delete(r.earlyFloors, id)
}

// HandleMessage processes a peer's message.
func (r *Replica) HandleMessage(from protocol.NodeID, m protocol.Message) {
	if !r.isNode(from) {
		return
	}
	switch m := m.(type) {
	case *Vote:
		if m != nil && validTime(m.PrepareTime) {
			r.onVote(from, m)
		}
	case *Commit:
		if m != nil && validTime(m.CommitTime) {
			r.onCommit(from, m)
		}
	case *CommitAck:
		if m != nil {
			r.onCommitAck(from, m)
		}
	case *Abort:
		if m == nil {
			return
		}
		if p := r.pending[m.Txn]; p != nil && p.coord == from && p.coord != r.self {
			r.abort(p)
		} else if _, known := r.decided[m.Txn]; !known && p == nil {
			r.decided[m.Txn] = decision{} // refuse the request if it comes late
		}
	case *Check:
		if m != nil && validTime(m.EffTime) {
			r.onCheck(from, m)
		}
	case *CheckReply:
		if m != nil && validTime(m.CommitTime, m.Floor) {
			r.onCheckReply(from, m)
		}
	}
}

func (r *Replica) onVote(from protocol.NodeID, m *Vote) {
	if d, ok := r.decided[m.Txn]; ok { // a retransmitted vote: repeat the outcome
		if d.committed {
			r.env.Send(from, &Commit{Txn: m.Txn, CommitTime: d.ct})
		} else {
			r.env.Send(from, &Abort{Txn: m.Txn})
		}
		return
	}
	p := r.pending[m.Txn]
	switch {
	case p == nil:
		ev := r.earlyVotes[m.Txn]
		if ev == nil {
			ev = map[protocol.NodeID]int64{}
			r.earlyVotes[m.Txn] = ev
		}
		ev[from] = m.PrepareTime
	case p.coord == r.self && slices.Contains(p.participants, from):
		p.votes[from] = m.PrepareTime
		r.tryDecide(p)
	}
}

func (r *Replica) onCommit(from protocol.NodeID, m *Commit) {
	if p := r.pending[m.Txn]; p != nil && p.coord == from && p.coord != r.self {
		r.commit(p, m.CommitTime)
	}
	if d := r.decided[m.Txn]; d.committed {
		r.env.Send(from, &CommitAck{Txn: m.Txn})
	}
}

func (r *Replica) onCommitAck(from protocol.NodeID, m *CommitAck) {
	u := r.unacked[m.Txn]
	if u == nil {
		return
	}
	u.nodes = slices.DeleteFunc(u.nodes, func(n protocol.NodeID) bool { return n == from })
	if len(u.nodes) == 0 {
		delete(r.unacked, m.Txn)
	}
}

// onCheck answers a commit check as the transaction's coordinator.
func (r *Replica) onCheck(from protocol.NodeID, m *Check) {
	reply := &CheckReply{Txn: m.Txn}
	d, decided := r.decided[m.Txn]
	p := r.pending[m.Txn]
	switch {
	case decided && d.committed:
		reply.Status, reply.CommitTime = CheckCommitted, d.ct
	case decided:
		reply.Status = CheckAborted
	case p != nil && p.coord == r.self:
		p.floor = max(p.floor, m.EffTime)
		reply.Status, reply.Floor = CheckUndecided, p.floor
	case p != nil:
		return // not the coordinator: a malformed check
	case m.EffTime == 0: // a liveness check for a transaction never received: presume abort
		r.presumeAborted(m.Txn)
		reply.Status = CheckAborted
	default: // a read's check for a transaction not yet received: promise for when it comes
		f := max(r.earlyFloors[m.Txn], m.EffTime)
		r.earlyFloors[m.Txn] = f
		reply.Status, reply.Floor = CheckUndecided, f
	}
	r.env.Send(from, reply)
}

func (r *Replica) onCheckReply(from protocol.NodeID, m *CheckReply) {
	p := r.pending[m.Txn]
	if p == nil || p.coord != from || p.coord == r.self {
		return
	}
	switch m.Status {
	case CheckCommitted:
		r.commit(p, m.CommitTime)
		r.env.Send(from, &CommitAck{Txn: m.Txn})
	case CheckAborted:
		r.abort(p)
	case CheckUndecided:
		p.floor = max(p.floor, m.Floor)
		p.checkUs = r.env.NowUs() + r.p.txTimeoutUs
		r.resolveParked()
	}
}

// HandleTimer runs the housekeeping: coordinator and participant timeouts, commit
// retransmission, parked reads that waited too long, and garbage collection.
func (r *Replica) HandleTimer(id protocol.TimerID) {
	if id != timerTick {
		return
	}
	r.env.SetTimer(r.p.retransmitUs, timerTick)
	now := r.env.NowUs()
	for _, id := range sortedIDs(r.pending) {
		p := r.pending[id]
		switch {
		case p == nil:
		case p.coord == r.self && now >= p.deadlineUs:
			r.abortAsCoordinator(p)
		case p.coord != r.self && now >= p.checkUs:
			p.checkUs = now + r.p.txTimeoutUs
			r.env.Send(p.coord, &Check{Txn: p.id})
		}
	}
	for _, id := range sortedIDs(r.unacked) {
		u := r.unacked[id]
		if now >= u.nextUs {
			u.nextUs = now + r.p.retransmitUs
			for _, n := range u.nodes {
				r.env.Send(n, &Commit{Txn: id, CommitTime: u.ct})
			}
		}
	}
	kept := r.parked[:0]
	for _, pr := range r.parked {
		if now >= pr.expiresUs {
			r.reply(pr.req, &ReadReply{Clock: r.clock, CommitChecks: pr.checks, Retry: true})
		} else {
			kept = append(kept, pr)
		}
	}
	clear(r.parked[len(kept):])
	r.parked = kept
	if now >= r.nextGCUs {
		r.nextGCUs = now + r.p.gcIntervalUs
		r.collect(now)
	}
}

func sortedIDs[V any](m map[txn.ID]V) []txn.ID {
	ids := make([]txn.ID, 0, len(m))
	for id := range m {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids
}

// collect drops the values of versions no read can need any more ([RESOLUTION G-GC]): superseded
// for longer than the transaction timeout plus the clock-skew bound, and not read for the
// transaction timeout. The newest version always stays. (It sends nothing, so the map order does
// not matter.) A collected version is dropped from the store too (store.Store.Drop), which the
// network server then deletes from its Pebble (store.Store.Changes): reads never return a
// collected version's value (they find it collected and retry at a newer time), and the
// checkpoint names a collected version without its value, so nothing needs it in the store.

func (r *Replica) collect(now int64) {
	window := r.p.txTimeoutUs + r.p.skewUs
	floor := r.commitFloor()
	for k := range r.gcKeys {
		ks := r.keys[k]
		vs := ks.versions
		live := 1
		for i := range vs[:len(vs)-1] {
			v := &vs[i]
			if v.collected {
				continue
			}
			if now-v.supersededUs > window && now-v.lastReadUs > r.p.txTimeoutUs {
				v.collected, v.value = true, nil
				r.env.Store().Drop(k, v.writer)
			} else {
				live++
			}
		}
		ks.compact(floor)
		if live == 1 {
			delete(r.gcKeys, k)
		}
	}
}

// commitFloor is a time every commit this partition can still make is at or above: a WOT commits
// at the largest of its participants' prepare times or later, so at or after its prepare time
// here, the clock when it was prepared: that of a WOT pending here, or the clock now or later.
func (r *Replica) commitFloor() int64 {
	f := r.clock
	for _, p := range r.pending {
		f = min(f, p.pt)
	}
	return f
}

// compact merges each run of consecutive collected versions committed before floor into its
// first, so that what collection leaves of a key stays bounded. Reads stay exact: a read by time
// that falls in the run found a collected version (Retry) and finds the first; and no commit can
// land inside the run any more, since it commits at floor or later. The version order for the
// checker is kept apart (Replica.order).
func (k *keyState) compact(floor int64) {
	kept := k.versions[:0]
	for _, v := range k.versions {
		if n := len(kept); n > 0 && v.collected && v.ct < floor && kept[n-1].collected && kept[n-1].ct < floor {
			continue
		}
		kept = append(kept, v)
	}
	clear(k.versions[len(kept):])
	k.versions = kept
}
