// Package helios implements Helios (dissertation seed 000, chapter 4; spec
// helios-message-futures.md §4): a geo-replicated transaction commit protocol whose commit
// latencies can reach the lower bound L_A + L_B ≥ RTT(A,B).
//
// Every datacenter holds a full replica and runs one Replica. A transaction commits at its own
// datacenter A once A has seen every other datacenter B's log up to B-time kts_B(t) = q(t) +
// co_A[B], where q(t) is A's clock at the commit request and co are commit offsets satisfying
// Rule 1 (co_A[B] + co_B[A] ≥ 0). Conflicts are detected pairwise: at the request against both
// pools of preparing transactions, and when a remote preparing record arrives. Rule 1 makes one
// of any two conflicting transactions see the other's preparing record before it commits, so
// clocks never matter for safety, only for latency.
//
// Variants, chosen by the liveness level f:
//   - helios-0 (f = 0, Rule 2): blocks while any datacenter is unreachable.
//   - helios-1 / helios-2 (Rule 3): a transaction also needs acknowledgements from f other
//     datacenters (a datacenter acknowledges t by incorporating its preparing record before its
//     own clock reaches q(t) + GT, and otherwise appends a NACK record), and a silent datacenter B
//     is inferred past q − GT once n − f others have moved on (spec §4.7). They keep committing
//     with up to f datacenters down, at a cost of about GT.
//   - helios-b: Helios-0 with all offsets 0 (no RTT estimates, no linear program).
//
// Choices where the sources are silent (see spec §8): the acknowledgement set is f datacenters
// other than the origin (GAP-H1); η uses T_A[A][C], or T_A[C][C] with kappa=diagonal (GAP-H2);
// a transaction that collects NACKs from more than n−1−f datacenters aborts (GAP-H4); a
// datacenter's in-doubt transactions stay in the others' EPTPool until it returns (GAP-H7);
// aborted finished records abort nothing (GAP-H6); the grace boundary is strict (GAP-H10).
package helios

import (
	"fmt"
	"math"
	"math/bits"
	"slices"
	"strings"

	"github.com/meridian-kv/meridian/protocol"
	"github.com/meridian-kv/meridian/protocol/txn"
	"github.com/meridian-kv/meridian/protocols/fullrep/rlog"
	"github.com/meridian-kv/meridian/protocols/registry"
	"github.com/meridian-kv/meridian/topology/lowerbound"
)

func init() {
	for _, p := range []struct {
		name, description string
		f                 int
		zeroOffsets       bool
	}{
		{"helios-0", "Helios, no failure tolerance: commit offsets from the lower bound (Rule 2)", 0, false},
		{"helios-1", "Helios tolerating 1 datacenter outage: acknowledgements and grace time (Rule 3)", 1, false},
		{"helios-2", "Helios tolerating 2 datacenter outages (Rule 3)", 2, false},
		{"helios-b", "Helios-0 with every commit offset 0 (no RTT estimates, no linear program)", 0, true},
	} {
		registry.Register(p.name, registry.Entry{Description: p.description, New: New(p.f, p.zeroOffsets), Codec: Codec,
			Family: registry.ReadWrite, ToleratesOutages: p.f, RandomParams: randomParams(p.f, p.zeroOffsets)})
	}
}

const timerPropagate protocol.TimerID = 1

// pending is a local transaction in PTPool.
type pending struct {
	t      *txn.Txn
	q      int64 // request timestamp; also its preparing record's timestamp
	client txn.ClientID
	seq    uint64
	nacks  uint64 // bitmask of datacenters that NACKed t
}

// Replica is one Helios instance: the state of spec §4.3.
type Replica struct {
	env      protocol.Env
	cfg      settings
	nodeOf   []protocol.NodeID // replica of each datacenter
	self, n  int
	log      *rlog.Log[Entry]
	ptPool   []*pending          // local preparing transactions, in q order
	ptIndex  txn.PoolIndex       // local pending transactions' keys
	eptPool  map[txn.ID]*txn.Txn // remote preparing transactions
	eptIndex txn.PoolIndex
	known    []int64 // scratch for knowledge
	progress []int64 // scratch for knowledge
}

// New returns a Factory for Helios with liveness level f; zeroOffsets selects Helios-B.
func New(f int, zeroOffsets bool) protocol.Factory {
	return func(pc protocol.Config, env protocol.Env) (protocol.Replica, error) {
		nodeOf, self, err := protocol.FullReplicas(pc)
		if err != nil {
			return nil, err
		}
		s, err := parseSettings(pc, f, zeroOffsets)
		if err != nil {
			return nil, err
		}
		return &Replica{
			env:     env,
			cfg:     s,
			nodeOf:  nodeOf,
			self:    self,
			n:       len(nodeOf),
			log:     rlog.New[Entry](self, len(nodeOf)),
			eptPool: map[txn.ID]*txn.Txn{},
		}, nil
	}
}

// Start sends the first heartbeat and arms the propagation timer.
func (r *Replica) Start() { r.propagate() }

// HandleTimer sends the periodic partial logs and re-evaluates commit conditions (the grace-time
// inference depends on this replica's own clock).
func (r *Replica) HandleTimer(id protocol.TimerID) {
	if id == timerPropagate {
		r.propagate()
		r.tryCommit()
	}
}

func (r *Replica) propagate() {
	r.log.Broadcast(r.env.NowUs(), func(to int, m *rlog.Message[Entry]) {
		r.env.Send(r.nodeOf[to], (*Message)(m))
	})
	r.log.Trim()
	r.env.SetTimer(r.cfg.intervalUs, timerPropagate)
}

// HandleRequest serves local reads and commit requests (Algorithm 3).
func (r *Replica) HandleRequest(req protocol.Request) {
	if !protocol.AdmitCommit(r.env, req, "helios") {
		return
	}
	t := req.Txn
	abort := func(reason txn.AbortReason) {
		r.env.Reply(protocol.Reply{Client: req.Client, Seq: req.Seq, Status: txn.Aborted, Reason: reason})
	}
	st := r.env.Store()
	switch {
	case r.ptIndex.WritesMeet(t, st.Keys()):
		abort(txn.ReasonLocalConflict)
		return
	case r.eptIndex.WritesMeet(t, st.Keys()):
		abort(txn.ReasonRemoteConflict)
		return
	case st.StaleTxn(t):
		abort(txn.ReasonStaleRead)
		return
	}
	rec := r.log.Append(r.env.NowUs(), Entry{Kind: Preparing, Txn: t})
	p := &pending{t: t, q: rec.TS, client: req.Client, seq: req.Seq}
	r.ptPool = append(r.ptPool, p)
	r.ptIndex.Add(t, st.Keys())
	r.tryCommit()
}

// ServesLocally implements protocol.LocalReader: a read (Get, ReadSnapshot) is served from the
// store at once (protocol.ServeLocalRead) and changes nothing.
func (r *Replica) ServesLocally(req protocol.Request) bool {
	return req.Kind == protocol.Get || req.Kind == protocol.ReadSnapshot
}

// HandleMessage incorporates a peer's partial log (Algorithm 4 per record), then merges its
// timetable, then re-evaluates commit conditions (Algorithm 5), in that order (spec §1.4).
func (r *Replica) HandleMessage(from protocol.NodeID, m protocol.Message) {
	msg, ok := m.(*Message)
	if !ok || msg.From < 0 || msg.From >= r.n || r.nodeOf[msg.From] != from || !msg.wellFormed() {
		return // not a well-formed Helios message from that peer: ignore rather than trust it
	}
	if err := r.log.Receive((*rlog.Message[Entry])(msg), r.processRemote); err != nil {
		return
	}
	r.tryCommit()
}

func (r *Replica) processRemote(rec rlog.Record[Entry]) {
	e := rec.Payload
	switch e.Kind {
	case Preparing:
		r.abortConflicting(e.Txn)
		r.eptPool[e.Txn.ID] = e.Txn
		r.eptIndex.AddWrites(e.Txn, r.env.Store().Keys())
		if r.cfg.f > 0 && r.env.NowUs() >= rec.TS+r.cfg.graceUs {
			r.log.Append(r.env.NowUs(), Entry{Kind: Nack, Of: e.Txn.ID})
		}
	case Finished:
		t, prepared := r.eptPool[e.Of]
		if e.Committed {
			// Alg. 4 aborts the conflicting local transactions again. After a preparing record
			// with the same writes there are none: it aborted those there were, and eptIndex has
			// kept new ones out since. (In the simulator both records carry the same Txn.)
			if !prepared || t != e.Txn && !slices.EqualFunc(t.Writes, e.Txn.Writes, func(a, b txn.Write) bool { return a.Key == b.Key }) {
				r.abortConflicting(e.Txn)
			}
			r.env.Store().ApplyTxn(e.Txn)
		}
		if prepared {
			delete(r.eptPool, e.Of)
			r.eptIndex.RemoveWrites(t, r.env.Store().Keys())
		}
	case Nack:
		for _, p := range r.ptPool {
			if p.t.ID == e.Of {
				p.nacks |= 1 << rec.Host
			}
		}
	}
}

// abortConflicting aborts every local preparing transaction whose read or write set meets w's
// writes.
func (r *Replica) abortConflicting(w *txn.Txn) {
	if !r.ptIndex.AccessedBy(w, r.env.Store().Keys()) {
		return
	}
	r.ptPool = slices.DeleteFunc(r.ptPool, func(p *pending) bool {
		if !p.t.WriteConflicts(w) {
			return false
		}
		r.finish(p, txn.Aborted, txn.ReasonRemoteConflict)
		return true
	})
}

// finish publishes p's outcome and answers its client; the caller removes p from ptPool.
func (r *Replica) finish(p *pending, status txn.Status, reason txn.AbortReason) {
	e := Entry{Kind: Finished, Of: p.t.ID, Committed: status == txn.Committed}
	if e.Committed {
		e.Txn = p.t
		r.env.Store().ApplyTxn(p.t)
	}
	r.log.Append(r.env.NowUs(), e)
	r.ptIndex.Remove(p.t, r.env.Store().Keys())
	r.env.Reply(protocol.Reply{Client: p.client, Seq: p.seq, Status: status, Reason: reason})
}

// tryCommit is Algorithm 5: commit, in q order, every local transaction whose commit condition
// holds, and abort those that can no longer gather f acknowledgements. kts_B(t) = q(t) + co[B]
// grows with q, so once one transaction lacks knowledge of some datacenter, every later one
// does too and only their give-up rule still needs checking.
func (r *Replica) tryCommit() {
	if len(r.ptPool) == 0 {
		return
	}
	known := r.knowledge()
	waiting := false
	r.ptPool = slices.DeleteFunc(r.ptPool, func(p *pending) bool {
		switch {
		case r.cfg.f > 0 && bits.OnesCount64(p.nacks) > r.n-1-r.cfg.f:
			r.finish(p, txn.Aborted, txn.ReasonNoAcks)
			return true
		case waiting:
			return false
		case !r.knows(p, known):
			waiting = true
			return false
		case r.acked(p):
			r.finish(p, txn.Committed, "")
			return true
		}
		return false
	})
}

// knowledge returns, per datacenter B, how far this replica knows B's log: T_A[A][B] under
// Rule 2, and T̂_A[A][B] = max(T_A[A][B], η_A(B)) under Rule 3 (spec §4.7). The slice is reused
// by the next call.
func (r *Replica) knowledge() []int64 {
	known := r.known[:0]
	for b := range r.n {
		known = append(known, r.log.T(r.self, b))
	}
	r.known = known
	if r.cfg.f == 0 {
		return known
	}
	progress := r.progress[:0]
	for b := range r.n {
		if b == r.self {
			continue
		}
		progress = progress[:0]
		for c := range r.n {
			switch {
			case c == b:
			case c == r.self:
				progress = append(progress, max(r.env.NowUs(), r.log.Last()))
			case r.cfg.kappaDiagonal:
				progress = append(progress, r.log.T(c, c))
			default:
				progress = append(progress, r.log.T(r.self, c))
			}
		}
		// η_A(B): the (n−f)-th largest progress among the n−1 datacenters other than B.
		slices.Sort(progress)
		eta := progress[len(progress)-(r.n-r.cfg.f)] - r.cfg.graceUs
		known[b] = max(known[b], eta)
	}
	r.progress = progress
	return known
}

// knows is Rule 2, and Rule 3's first condition: this replica has every other datacenter's log
// up to p's knowledge timestamp for it, kts_B(p) = q(p) + co[B].
func (r *Replica) knows(p *pending, known []int64) bool {
	co := r.cfg.offsetsUs[r.self]
	for b := range r.n {
		if b != r.self && known[b] < p.q+co[b] {
			return false
		}
	}
	return true
}

// acked is Rule 3's second and third conditions: f datacenters other than this one hold p's
// preparing record and did not NACK it. It always holds for f = 0.
func (r *Replica) acked(p *pending) bool {
	acks := 0
	for c := range r.n {
		if c != r.self && r.log.T(c, r.self) >= p.q && p.nacks&(1<<c) == 0 {
			acks++
		}
	}
	return acks >= r.cfg.f
}

// settings are Helios's parsed parameters.
type settings struct {
	f             int
	intervalUs    int64
	graceUs       int64
	kappaDiagonal bool
	offsetsUs     [][]int64 // offsetsUs[A][B] = co_A[B] in microseconds
}

// Parameter names Helios accepts.
const (
	ParamInterval  = "interval"   // propagation interval (default 10ms, spec GAP-H5)
	ParamGrace     = "gt"         // grace time for Helios-f (default 500ms)
	ParamLatencies = "latency_ms" // target latencies per DC in topology order (default: MAO, rounded up)
	ParamKappa     = "kappa"      // "row" (T_A[A][C], default) or "diagonal" (T_A[C][C])
	// ParamRTTEstimates replaces the topology's RTTs with estimates, in ms, wherever Helios plans
	// with RTTs: the MAO program (when latency_ms is absent) and Eq. 4.5's offsets co_A[B] =
	// L_A − RTT(A,B)/2. The value is the upper triangle of the RTT matrix in topology order, one
	// number per datacenter pair (0,1), (0,2), …, (0,n−1), (1,2), …, (n−2,n−1): for aws-helios
	// (V, O, C, I, S) that is "V-O,V-C,V-I,V-S,O-C,O-I,O-S,C-I,C-S,I-S", 10 numbers. Every
	// estimate must be finite and ≥ 0. Wrong estimates cost latency, never safety (Rule 1 holds
	// by construction); all zeros make Helios-0 behave as Helios-B (spec E4.4).
	ParamRTTEstimates = "rtt_est_ms"
	// ParamUnsafeSkipRule1 accepts offsets that violate Rule 1. It exists only so that tests can
	// show that such a Helios loses serializability and that the checker notices.
	ParamUnsafeSkipRule1 = "unsafe_skip_rule1"
	// ParamUnsafeCommitEarly lowers every knowledge timestamp kts_B(t) by the given duration, so
	// that transactions commit that much before Rule 2 or Rule 3 allows. It exists only so that
	// tests can show that the swarm's binding topology, where the knowledge condition and not the
	// acknowledgements decides when Helios-f commits, catches a commit rule that is slightly off.
	ParamUnsafeCommitEarly = "unsafe_commit_early"
)

func parseSettings(pc protocol.Config, f int, zeroOffsets bool) (settings, error) {
	p := pc.Params
	if err := p.CheckKnown([]string{ParamInterval, ParamGrace, ParamLatencies, ParamKappa, ParamRTTEstimates, ParamUnsafeSkipRule1, ParamUnsafeCommitEarly}, nil); err != nil {
		return settings{}, fmt.Errorf("helios: %w", err)
	}
	topo := pc.Topology
	n := topo.N()
	s := settings{f: f}
	var err error
	if n < 2*f+1 {
		return s, fmt.Errorf("helios-%d needs at least %d datacenters, topology %s has %d", f, 2*f+1, topo.Name, n)
	}
	if n > 64 {
		return s, fmt.Errorf("helios: at most 64 datacenters supported, topology %s has %d", topo.Name, n)
	}
	if s.intervalUs, err = p.Duration(ParamInterval, 10_000); err != nil {
		return s, fmt.Errorf("helios: %w", err)
	}
	if s.intervalUs <= 0 {
		return s, fmt.Errorf("helios: parameter %s must be positive", ParamInterval)
	}
	if s.graceUs, err = p.Duration(ParamGrace, 500_000); err != nil {
		return s, fmt.Errorf("helios: %w", err)
	}
	if s.graceUs <= 0 {
		return s, fmt.Errorf("helios: parameter %s must be positive", ParamGrace)
	}
	switch p[ParamKappa] {
	case "", "row":
	case "diagonal":
		s.kappaDiagonal = true
	default:
		return s, fmt.Errorf("helios: parameter %s must be row or diagonal, not %q", ParamKappa, p[ParamKappa])
	}
	skipRule1, err := p.Bool(ParamUnsafeSkipRule1, false)
	if err != nil {
		return s, fmt.Errorf("helios: %w", err)
	}
	earlyUs, err := p.Duration(ParamUnsafeCommitEarly, 0)
	if err != nil {
		return s, fmt.Errorf("helios: %w", err)
	}
	coMs, err := offsetsMs(pc, zeroOffsets)
	if err != nil {
		return s, err
	}
	if !skipRule1 {
		if err := lowerbound.CheckRule1(coMs, topo.DCs); err != nil {
			return s, fmt.Errorf("helios: refusing to start: %w", err)
		}
	}
	s.offsetsUs = make([][]int64, n)
	for a := range n {
		s.offsetsUs[a] = make([]int64, n)
		for b := range n {
			if a != b {
				s.offsetsUs[a][b] = int64(math.Round(coMs[a][b]*1000)) - earlyUs
			}
		}
	}
	return s, nil
}

// offsetsMs derives the commit offsets of Eq. 4.5 from the target latencies (given, or the
// MAO solution rounded up, spec GAP-H8) and the RTTs Helios plans with (the topology's, or the
// estimates of rtt_est_ms).
func offsetsMs(pc protocol.Config, zero bool) ([][]float64, error) {
	topo := pc.Topology
	rttMs, err := plannedRTTsMs(pc)
	if err != nil {
		return nil, err
	}
	if zero {
		return lowerbound.HeliosBOffsets(topo.N()), nil
	}
	latencies, err := pc.Params.Floats(ParamLatencies)
	if err != nil {
		return nil, fmt.Errorf("helios: %w", err)
	}
	if latencies == nil {
		sol, err := lowerbound.MAO(rttMs)
		if err != nil {
			return nil, fmt.Errorf("helios: lower bound for topology %s: %w", topo.Name, err)
		}
		latencies = lowerbound.RoundUp(sol.LatencyMs)
	}
	if len(latencies) != topo.N() {
		return nil, fmt.Errorf("helios: parameter %s has %d values, topology %s has %d datacenters", ParamLatencies, len(latencies), topo.Name, topo.N())
	}
	return lowerbound.Offsets(latencies, rttMs), nil
}

// plannedRTTsMs returns the RTT matrix Helios plans with: the topology's, or the estimates of
// parameter rtt_est_ms (see ParamRTTEstimates), checked.
func plannedRTTsMs(pc protocol.Config) ([][]float64, error) {
	topo := pc.Topology
	est, err := pc.Params.Floats(ParamRTTEstimates)
	if err != nil {
		return nil, fmt.Errorf("helios: %w", err)
	}
	if est == nil {
		return topo.RTTMs, nil
	}
	n := topo.N()
	var pairs []string
	for a := range n {
		for b := a + 1; b < n; b++ {
			pairs = append(pairs, topo.DCs[a]+"-"+topo.DCs[b])
		}
	}
	if len(est) != len(pairs) {
		return nil, fmt.Errorf("helios: parameter %s has %d values, topology %s has %d datacenter pairs (%s)",
			ParamRTTEstimates, len(est), topo.Name, len(pairs), strings.Join(pairs, ","))
	}
	rttMs := make([][]float64, n)
	for a := range rttMs {
		rttMs[a] = make([]float64, n)
	}
	k := 0
	for a := range n {
		for b := a + 1; b < n; b++ {
			if v := est[k]; math.IsNaN(v) || math.IsInf(v, 0) || v < 0 {
				return nil, fmt.Errorf("helios: parameter %s: the estimate for %s is %g, want a finite number ≥ 0", ParamRTTEstimates, pairs[k], v)
			}
			rttMs[a][b], rttMs[b][a] = est[k], est[k]
			k++
		}
	}
	return rttMs, nil
}
