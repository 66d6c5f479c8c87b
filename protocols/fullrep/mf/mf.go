// Package mf implements Message Futures (dissertation seed 000, chapter 3; spec
// helios-message-futures.md §2): one-copy serializable geo-replicated transactions over a
// continuously exchanged replicated log, without synchronised clocks.
//
// Each datacenter A sends its partial log to every other datacenter every P_A and remembers the
// timestamp of its last send (LPT). A transaction that asks to commit takes the current LPT and
// commits once every datacenter is known to have received A's log as of that send
// (∀B: T_A[B][A] ≥ LPT): by then any conflicting transaction B published before hearing of it is
// already in A's log, and anything B starts later will see it (the "implicit promise"). A
// remote pending or committed record aborts every local pending transaction whose read or write
// set it writes.
//
// Choices where the source is silent (spec §8): every replica sends once at start-up before it
// commits anything (GAP-M1); aborts are published as finished records with a flag (GAP-M2);
// remote pending records are also checked at request time (GAP-M3); a pending transaction whose
// read became stale aborts (GAP-M4); sends are periodic only (GAP-M5's ack-on-receive mode is not
// implemented). Timestamps come from max(local clock, last+1), which is strictly increasing and
// compared only with this replica's own timestamps, so clock skew is irrelevant.
package mf

import (
	"fmt"
	"slices"
	"strings"

	"github.com/meridian-kv/meridian/protocol"
	"github.com/meridian-kv/meridian/protocol/txn"
	"github.com/meridian-kv/meridian/protocols/fullrep/rlog"
	"github.com/meridian-kv/meridian/protocols/registry"
)

func init() {
	registry.Register("mf", registry.Entry{Description: "Message Futures: commit once every datacenter has heard the last send",
		New: New, Codec: Codec, Family: registry.ReadWrite, RandomParams: randomParams})
}

const timerPropagate protocol.TimerID = 1

// pending is a local transaction in PT_A.
type pending struct {
	t      *txn.Txn
	lpt    int64 // LPT_A when t asked to commit
	client txn.ClientID
	seq    uint64
	// fresh is how many versions the store held when t's reads were last found fresh: until
	// another is installed, none of them can become stale.
	fresh int
}

// Replica is one Message Futures instance: the state of spec §2.3.
type Replica struct {
	env         protocol.Env
	intervalUs  int64
	nodeOf      []protocol.NodeID
	self, n     int
	log         *rlog.Log[Entry]
	lpt         int64 // timestamp of this replica's latest send
	pt          []*pending
	ptIndex     txn.PoolIndex       // local pending transactions' keys
	remote      map[txn.ID]*txn.Txn // remote Ep records without their Ec yet
	remoteIndex txn.PoolIndex
	// unsafeCommitFirst runs Algorithm 2 before Algorithm 1 on each message, the order §2.5.2
	// forbids. Only tests set it, to show that the checker catches the resulting anomaly.
	unsafeCommitFirst bool
}

// Parameter names Message Futures accepts.
const (
	// ParamInterval is every replica's propagation interval (default 10ms, spec GAP-E1);
	// "interval.<DC>" overrides it for one datacenter (Figures 3.8 and 3.9).
	ParamInterval = "interval"
)

// New is the Factory for Message Futures.
func New(pc protocol.Config, env protocol.Env) (protocol.Replica, error) {
	nodeOf, self, err := protocol.FullReplicas(pc)
	if err != nil {
		return nil, err
	}
	if err := pc.Params.CheckKnown([]string{ParamInterval}, []string{ParamInterval}); err != nil {
		return nil, fmt.Errorf("mf: %w", err)
	}
	for k := range pc.Params {
		if dc, ok := strings.CutPrefix(k, ParamInterval+"."); ok {
			if _, known := pc.Topology.Index(dc); !known {
				return nil, fmt.Errorf("mf: parameter %s names unknown datacenter %q", k, dc)
			}
		}
	}
	interval, err := pc.Params.Duration(ParamInterval, 10_000)
	if err == nil {
		interval, err = pc.Params.Duration(ParamInterval+"."+pc.Topology.DCs[self], interval)
	}
	if err != nil {
		return nil, fmt.Errorf("mf: %w", err)
	}
	if interval <= 0 {
		return nil, fmt.Errorf("mf: propagation interval must be positive")
	}
	return &Replica{
		env:        env,
		intervalUs: interval,
		nodeOf:     nodeOf,
		self:       self,
		n:          len(nodeOf),
		log:        rlog.New[Entry](self, len(nodeOf)),
		remote:     map[txn.ID]*txn.Txn{},
	}, nil
}

// Start makes the start-up send (GAP-M1): LPT starts at its timestamp, so no transaction can
// commit before every peer has heard from this replica.
func (r *Replica) Start() { r.propagate() }

// HandleTimer runs the send loop (§2.5.3).
func (r *Replica) HandleTimer(id protocol.TimerID) {
	if id == timerPropagate {
		r.propagate()
	}
}

func (r *Replica) propagate() {
	r.lpt = r.log.Broadcast(r.env.NowUs(), func(to int, m *rlog.Message[Entry]) {
		r.env.Send(r.nodeOf[to], (*Message)(m))
	})
	r.log.Trim()
	r.env.SetTimer(r.intervalUs, timerPropagate)
}

// HandleRequest serves local reads and commit requests (§2.5.1).
func (r *Replica) HandleRequest(req protocol.Request) {
	if !protocol.AdmitCommit(r.env, req, "mf") {
		return
	}
	t := req.Txn
	abort := func(reason txn.AbortReason) {
		r.env.Reply(protocol.Reply{Client: req.Client, Seq: req.Seq, Status: txn.Aborted, Reason: reason})
	}
	st := r.env.Store()
	switch {
	case st.StaleTxn(t):
		abort(txn.ReasonStaleRead)
		return
	case r.ptIndex.WritesMeet(t, st.Keys()):
		abort(txn.ReasonLocalConflict)
		return
	case r.remoteIndex.WritesMeet(t, st.Keys()):
		abort(txn.ReasonRemoteConflict)
		return
	}
	r.pt = append(r.pt, &pending{t: t, lpt: r.lpt, client: req.Client, seq: req.Seq, fresh: st.Versions()})
	r.ptIndex.Add(t, st.Keys())
	r.log.Append(r.env.NowUs(), Entry{Txn: &txn.Txn{ID: t.ID, Writes: t.Writes}})
	r.tryCommit() // Immediate Commit Zone: the condition may already hold
}

// HandleMessage incorporates a peer's partial log (Algorithm 1 per record), merges its
// timetable, then runs Algorithm 2, in that order: an abort caused by a record must win over a
// commit condition the same message satisfies (Figure 3.1 at t=35).
func (r *Replica) HandleMessage(from protocol.NodeID, m protocol.Message) {
	msg, ok := m.(*Message)
	if !ok || msg.From < 0 || msg.From >= r.n || r.nodeOf[msg.From] != from || !msg.wellFormed() {
		return // not a well-formed MF message from that peer: ignore rather than trust it
	}
	if r.unsafeCommitFirst {
		var records []rlog.Record[Entry]
		if r.log.Receive((*rlog.Message[Entry])(msg), func(rec rlog.Record[Entry]) { records = append(records, rec) }) == nil {
			r.tryCommit()
			for _, rec := range records {
				r.processRemote(rec)
			}
		}
		return
	}
	if err := r.log.Receive((*rlog.Message[Entry])(msg), r.processRemote); err != nil {
		return
	}
	r.tryCommit()
}

func (r *Replica) processRemote(rec rlog.Record[Entry]) {
	e := rec.Payload
	keys := r.env.Store().Keys()
	if (!e.Finished || e.Committed) && r.ptIndex.AccessedBy(e.Txn, keys) { // an aborted Ec aborts nobody
		r.pt = slices.DeleteFunc(r.pt, func(p *pending) bool {
			if !p.t.WriteConflicts(e.Txn) {
				return false
			}
			r.finish(p, txn.Aborted, txn.ReasonRemoteConflict)
			return true
		})
	}
	if !e.Finished {
		r.remote[e.Txn.ID] = e.Txn
		r.remoteIndex.AddWrites(e.Txn, keys)
		return
	}
	if e.Committed {
		r.env.Store().ApplyTxn(e.Txn)
	}
	if t, ok := r.remote[e.Txn.ID]; ok {
		delete(r.remote, e.Txn.ID)
		r.remoteIndex.RemoveWrites(t, keys)
	}
}

// tryCommit is Algorithm 2.
func (r *Replica) tryCommit() {
	st := r.env.Store()
	r.pt = slices.DeleteFunc(r.pt, func(p *pending) bool {
		if v := st.Versions(); v != p.fresh {
			if st.StaleTxn(p.t) {
				r.finish(p, txn.Aborted, txn.ReasonStaleRead)
				return true
			}
			p.fresh = v
		}
		if !r.everyoneHeard(p.lpt) {
			return false
		}
		r.finish(p, txn.Committed, "")
		return true
	})
}

// everyoneHeard reports whether every datacenter is known to hold this replica's log as of
// timestamp lpt (Definition 1, condition 2).
func (r *Replica) everyoneHeard(lpt int64) bool {
	for b := range r.n {
		if r.log.T(b, r.self) < lpt {
			return false
		}
	}
	return true
}

// finish publishes p's outcome as Ec(p) and answers its client; the caller removes p from pt.
func (r *Replica) finish(p *pending, status txn.Status, reason txn.AbortReason) {
	e := Entry{Finished: true, Committed: status == txn.Committed, Txn: &txn.Txn{ID: p.t.ID}}
	if e.Committed {
		e.Txn.Writes = p.t.Writes
		r.env.Store().ApplyTxn(p.t)
	}
	r.log.Append(r.env.NowUs(), e)
	r.ptIndex.Remove(p.t, r.env.Store().Keys())
	r.env.Reply(protocol.Reply{Client: p.client, Seq: p.seq, Status: status, Reason: reason})
}
