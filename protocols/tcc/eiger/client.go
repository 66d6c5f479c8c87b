package eiger

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"

	"github.com/meridian-kv/meridian/protocol"
	"github.com/meridian-kv/meridian/protocol/txn"
	"github.com/meridian-kv/meridian/protocols/tcc"
)

// Client is one session's Eiger client library: its Lamport clock, its dependency list, and the
// ROT and WOT algorithms (see the package comment). It runs one transaction at a time.
type Client struct {
	tr          tcc.Transport
	rand        *rand.Rand
	nodes       []protocol.NodeID // partition → node
	txTimeoutUs int64
	timeout     tcc.Timeout // the running attempt's

	clock int64 // the Lamport clock
	deps  []Dep // versions read since the last write (or that write), append-only
	// depTime is the largest EVT in the dependency list: of the versions read (as their answers
	// gave it) and of the writes that collapsed it (their commit times). Every version in the
	// session's causal past committed at or before it.
	depTime int64
	// readClock: ROT requests carry clock (param read_clock). Without it, every ROT's effective
	// time must reach depTime (the dependency-time check), unless skipDepCheck (param
	// unsafe_skip_dep_check, deliberately broken) turns the check off.
	readClock, skipDepCheck bool
	// attempt numbers the current attempt of the current transaction; answers and timers of
	// earlier attempts see a different number and are ignored.
	attempt uint64
}

// NewClient builds an Eiger client library. It shares the replicas' parameters (tx_timeout).
func NewClient(cfg tcc.ClientConfig) (tcc.Client, error) {
	p, err := parseParams(cfg.Params)
	if err != nil {
		return nil, err
	}
	if cfg.Layout == nil || len(cfg.Layout.Node) != 1 || cfg.DC != 0 || cfg.Transport == nil || cfg.Rand == nil {
		return nil, errors.New("eiger: a client needs a one-datacenter layout, a transport and a PRNG")
	}
	return &Client{tr: cfg.Transport, rand: cfg.Rand, nodes: cfg.Layout.Node[0], txTimeoutUs: p.txTimeoutUs,
		readClock: p.readClock, skipDepCheck: p.skipDepCheck}, nil
}

// readClockValue is the clock a ROT request carries: the client's, or none (0) without
// read_clock.
func (c *Client) readClockValue() int64 {
	if c.readClock {
		return c.clock
	}
	return 0
}

// Deps returns the length of the dependency list, the client-side metadata whose upkeep grows
// with it (spec E3), for a client cost model.
func (c *Client) Deps() int { return len(c.deps) }

// byPartition groups keys by partition, in partition order.
func (c *Client) byPartition(keys []string) (parts []int, groups [][]string) {
	g := make([][]string, len(c.nodes))
	for _, k := range keys {
		p := tcc.PartitionOf(k, len(c.nodes))
		g[p] = append(g[p], k)
	}
	for p, ks := range g {
		if len(ks) > 0 {
			parts, groups = append(parts, p), append(groups, ks)
		}
	}
	return parts, groups
}

// next starts a new attempt: earlier answers and timers become stale. If retry is not nil it
// runs after the transaction timeout unless the attempt is over by then.
func (c *Client) next(retry func()) uint64 {
	c.attempt++
	a := c.attempt
	if retry != nil {
		c.timeout.Arm(c.tr, c.txTimeoutUs, func() {
			if c.attempt == a {
				retry()
			}
		})
	}
	return a
}

// rot is a read-only transaction in progress.
type rot struct {
	keys    []string // as requested, repeats included
	uniq    []string // distinct, in first-occurrence order
	done    func(tcc.ReadResult)
	reads   map[string]KeyRead
	waiting int
	round   int
	checks  int
}

// ReadTx runs a ROT: round 1, then, if the intervals share no point, a read by time at the
// effective time (which may cost the partitions commit checks, the third round). A ROT that does
// not finish within the transaction timeout, or that a partition asks to retry, restarts from
// round 1; Rounds and CommitChecks describe the attempt that finished.
func (c *Client) ReadTx(_ txn.ID, keys []string, done func(tcc.ReadResult)) {
	if len(keys) == 0 {
		done(tcc.ReadResult{})
		return
	}
	t := &rot{keys: keys, done: done}
	for _, k := range keys {
		if !slices.Contains(t.uniq, k) {
			t.uniq = append(t.uniq, k)
		}
	}
	c.startRead(t)
}

func (c *Client) startRead(t *rot) {
	a := c.next(func() { c.startRead(t) })
	t.reads, t.round, t.checks = map[string]KeyRead{}, 1, 0
	parts, groups := c.byPartition(t.uniq)
	t.waiting = len(parts)
	for i, p := range parts {
		c.call(a, t, p, &Read{Keys: groups[i], Clock: c.readClockValue()})
	}
}

func (c *Client) call(a uint64, t *rot, p int, m protocol.Message) {
	c.tr.CallNode(c.nodes[p], protocol.Request{Kind: protocol.Operation, Op: m}, func(rep protocol.Reply) {
		if c.attempt == a {
			c.onRead(t, rep, m)
		}
	})
}

// onRead takes one partition's answer to the current round.
func (c *Client) onRead(t *rot, rep protocol.Reply, req protocol.Message) {
	m, ok := rep.Op.(*ReadReply)
	var keys []string
	switch q := req.(type) {
	case *Read:
		keys = q.Keys
	case *ReadByTime:
		keys = q.Keys
	}
	switch {
	case rep.Err != "":
		c.finishRead(t, tcc.ReadResult{Err: errors.New(rep.Err)})
		return
	case !ok || m == nil || (!m.Retry && !answers(m.Reads, keys)):
		c.finishRead(t, tcc.ReadResult{Err: fmt.Errorf("eiger: malformed read answer %T", rep.Op)})
		return
	}
	c.clock = max(c.clock, m.Clock)
	if m.Retry {
		c.startRead(t)
		return
	}
	t.checks += m.CommitChecks
	for _, r := range m.Reads {
		t.reads[r.Key] = r
	}
	if t.waiting--; t.waiting > 0 {
		return
	}
	if t.round == 1 {
		c.readByTime(t)
		return
	}
	c.finishRead(t, tcc.ReadResult{})
}

// answers reports whether reads answer exactly keys, in order.
func answers(reads []KeyRead, keys []string) bool {
	if len(reads) != len(keys) {
		return false
	}
	for i, r := range reads {
		if r.Key != keys[i] {
			return false
		}
	}
	return true
}

// readByTime finishes round 1: if every interval contains the effective time (the largest EVT,
// or empty answer's LVT [RESOLUTION E1]) the ROT is done; otherwise the keys whose interval
// ends before it, and the empty ones, are read again at it. When reads carry no clock, the
// effective time is also at least the dependency time: a key whose interval ends before it may
// miss a version of the session's past, so it is read again too (the dependency-time check).
func (c *Client) readByTime(t *rot) {
	effT := int64(0)
	if !c.readClock && !c.skipDepCheck {
		effT = c.depTime
	}
	for _, k := range t.uniq {
		r := t.reads[k]
		if r.Pending {
			effT = max(effT, r.LVT)
		} else {
			effT = max(effT, r.EVT)
		}
	}
	var again []string
	for _, k := range t.uniq {
		if r := t.reads[k]; r.Pending || r.LVT < effT {
			again = append(again, k)
		}
	}
	if len(again) == 0 {
		c.finishRead(t, tcc.ReadResult{})
		return
	}
	t.round = 2
	parts, groups := c.byPartition(again)
	t.waiting = len(parts)
	for i, p := range parts {
		c.call(c.attempt, t, p, &ReadByTime{Keys: groups[i], EffTime: effT, Clock: c.readClockValue()})
	}
}

// finishRead ends the ROT; a successful one adds what it read to the dependency list.
func (c *Client) finishRead(t *rot, res tcc.ReadResult) {
	c.next(nil)
	if res.Err == nil {
		res.Rounds, res.CommitChecks = t.round, t.checks
		if t.checks > 0 {
			res.Rounds = 3
		}
		res.Reads = make([]tcc.Read, len(t.keys))
		for i, k := range t.keys {
			r := t.reads[k]
			res.Reads[i] = tcc.Read{Key: k, Value: r.Value, Version: r.Writer}
		}
		for _, k := range t.uniq {
			if r := t.reads[k]; r.Writer != txn.None {
				c.addDep(Dep{Key: k, Version: r.Writer})
				c.depTime = max(c.depTime, r.EVT)
			}
		}
	}
	t.done(res)
}

// addDep appends d to the dependency list unless it is there: a linear scan, like the upkeep of
// Eiger's client dependency structure, whose cost grows with the list (spec E3).
func (c *Client) addDep(d Dep) {
	for _, o := range c.deps {
		if o == d {
			return
		}
	}
	c.deps = append(c.deps, d)
}

// WriteTx runs a WOT: every participant gets its writes directly, one of them (chosen uniformly
// with the seeded PRNG, spec A14) coordinates, and the coordinator's answer ends the WOT. Without
// an answer within the transaction timeout the client sends every request again with the same
// transaction id (spec A17); the partitions deduplicate.
func (c *Client) WriteTx(id txn.ID, writes []txn.Write, done func(tcc.WriteResult)) {
	if len(writes) == 0 {
		done(tcc.WriteResult{Status: txn.Committed})
		return
	}
	last := map[string]int{} // [RESOLUTION A20] the last write to a key wins
	for i, w := range writes {
		last[w.Key] = i
	}
	keys := make([]string, 0, len(last))
	for i, w := range writes {
		if last[w.Key] == i {
			keys = append(keys, w.Key)
		}
	}
	parts, groups := c.byPartition(keys)
	coordIdx := c.rand.IntN(len(parts))
	coord := c.nodes[parts[coordIdx]]
	reqs := make([]*WriteReq, len(parts))
	for i := range parts {
		q := &WriteReq{Txn: id, Coordinator: coord, Clock: c.clock, Writes: make([]txn.Write, len(groups[i]))}
		for j, k := range groups[i] {
			q.Writes[j] = writes[last[k]]
		}
		if i == coordIdx {
			q.Deps = c.deps[:len(c.deps):len(c.deps)]
			for _, pp := range parts {
				q.Participants = append(q.Participants, c.nodes[pp])
			}
		}
		reqs[i] = q
	}
	c.sendWrite(id, parts, reqs, coordIdx, done)
}

func (c *Client) sendWrite(id txn.ID, parts []int, reqs []*WriteReq, coordIdx int, done func(tcc.WriteResult)) {
	a := c.next(func() { c.sendWrite(id, parts, reqs, coordIdx, done) })
	for i, p := range parts {
		coord := i == coordIdx
		c.tr.CallNode(c.nodes[p], protocol.Request{Kind: protocol.Operation, Op: reqs[i]}, func(rep protocol.Reply) {
			if c.attempt != a {
				return
			}
			m, ok := rep.Op.(*WriteReply)
			if rep.Err != "" || !ok || m == nil || m.Txn != id {
				c.next(nil)
				done(tcc.WriteResult{Status: txn.Unknown, Err: fmt.Errorf("eiger: malformed write answer %q %T", rep.Err, rep.Op)})
				return
			}
			c.clock = max(c.clock, m.Clock)
			switch {
			case coord && m.Status == Committed:
				c.next(nil)
				c.clock = max(c.clock, m.CommitTime)
				c.deps = []Dep{{Key: reqs[i].Writes[0].Key, Version: id}} // collapse to this write
				c.depTime = max(c.depTime, m.CommitTime)
				done(tcc.WriteResult{Status: txn.Committed})
			case coord && m.Status == Aborted:
				c.next(nil)
				done(tcc.WriteResult{Status: txn.Aborted})
			}
		})
	}
}
