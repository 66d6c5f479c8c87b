package fastccs

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"

	"github.com/meridian-kv/meridian/protocol"
	"github.com/meridian-kv/meridian/protocol/txn"
	"github.com/meridian-kv/meridian/protocols/tcc"
)

// Client is one session's FastCCS library (Algorithm 1 with spec A6, A7, A13, A17, A20): it
// keeps the session's causal past vc_c and runs one transaction at a time.
//
// Timeouts (spec A17, A18): a ROT that has not finished tx_timeout after it (re)started begins
// again from round 1, and so does one whose round-2 read found a version collected; after
// `retries` restarts it fails with an error; ReadResult.Rounds counts the rounds of the attempt
// that answered (1 or 2, spec C5). A WOT that has not heard from every participant
// after tx_timeout sends its WriteReq again, with the same transaction id, to the participants
// that have not answered (partitions deduplicate); after `retries` retries it reports
// txn.Unknown without touching vc_c: the transaction may still commit, and its commit vector
// may cover entries no partition has confirmed yet, so merging anything from it would break I4.
// A participant's abort answer ends a WOT as txn.Aborted at once (aborts are decided only by the
// coordinator, so they are final).
type Client struct {
	tr     tcc.Transport
	rnd    *rand.Rand
	cfg    settings
	slots  Slots
	layout *tcc.Layout
	dc     int
	nodeOf []protocol.NodeID // partition → node in the client's datacenter
	vc     VC
	// attempt names the running ROT attempt or WOT; callbacks of an earlier one are ignored.
	attempt uint64
	timeout tcc.Timeout // the running attempt's
	// coordinatorOf picks a WOT's coordinator among its participants (sorted); nil is the
	// uniform choice of spec A14. Scenario tests set it.
	coordinatorOf func(participants []int) int
}

// NewClient builds a session's library; it validates cfg.Params like New does.
func NewClient(cfg tcc.ClientConfig) (tcc.Client, error) {
	if cfg.Layout != nil && (len(cfg.Layout.Node) != 1 || cfg.DC != 0) {
		return nil, fmt.Errorf("fastccs: the thesis's protocol runs in one datacenter (client in datacenter %d of %d)", cfg.DC, len(cfg.Layout.Node))
	}
	return newClient(cfg)
}

func newClient(cfg tcc.ClientConfig) (*Client, error) {
	s, err := parseSettings(cfg.Params)
	if err != nil {
		return nil, err
	}
	if cfg.Layout == nil || cfg.Transport == nil || cfg.Rand == nil {
		return nil, errors.New("fastccs: client config needs a layout, a transport and a PRNG")
	}
	slots := Slots{DCs: len(cfg.Layout.Node), Partitions: cfg.Layout.Partitions()}
	return &Client{tr: cfg.Transport, rnd: cfg.Rand, cfg: s, slots: slots, layout: cfg.Layout, dc: cfg.DC,
		nodeOf: cfg.Layout.Node[cfg.DC], vc: make(VC, slots.Len())}, nil
}

// Move implements tcc.Mover (the geo extension's rule for a session that changes datacenter,
// spec G1). The session's clock vc_c may name commits of its old datacenter, and of others, that
// the new one has not applied yet; merging it there would break I4 (a partition would believe
// another partition of its datacenter holds what it does not) and the session could miss its
// own writes. So the session asks every partition of the new datacenter whether it covers
// vc_c (Cover), again every cover_poll until each has said yes, and only then runs
// transactions there. A new datacenter that has not covered vc_c after (retries + 1) ×
// tx_timeout (it is cut off from the writes' origin) fails the move and the session stays.
func (c *Client) Move(dc int, done func(error)) {
	if dc < 0 || dc >= len(c.layout.Node) {
		done(fmt.Errorf("fastccs: no datacenter %d of %d to move to", dc, len(c.layout.Node)))
		return
	}
	if dc == c.dc || c.cfg.skipCoverWait {
		c.dc, c.nodeOf = dc, c.layout.Node[dc]
		done(nil)
		return
	}
	c.attempt++
	a := c.attempt
	to := c.layout.Node[dc]
	vc := c.vc.Clone()
	covered := make([]bool, c.slots.Partitions)
	left := len(covered)
	waitUs := int64(c.cfg.retries+1) * c.cfg.txTimeoutUs
	deadlineUs := c.tr.NowUs() + waitUs
	var ask func()
	ask = func() {
		if c.attempt != a {
			return
		}
		if c.tr.NowUs() >= deadlineUs {
			c.attempt++
			done(fmt.Errorf("fastccs: datacenter %d did not cover the session's past within %dµs", dc, waitUs))
			return
		}
		for p, ok := range covered {
			if ok {
				continue
			}
			c.tr.CallNode(to[p], protocol.Request{Kind: protocol.Operation, Op: &Cover{VC: vc}}, func(r protocol.Reply) {
				resp, ok := r.Op.(*CoverResp)
				if c.attempt != a || !ok || !resp.Covered || covered[p] {
					return
				}
				covered[p] = true
				if left--; left == 0 {
					c.attempt++
					c.dc, c.nodeOf = dc, to
					done(nil)
				}
			})
		}
		c.tr.After(c.cfg.coverPollUs, ask)
	}
	ask()
}

// call sends op to partition p and hands the reply to done unless attempt a is over.
func (c *Client) call(p int, a uint64, op protocol.Message, done func(protocol.Reply)) {
	c.tr.CallNode(c.nodeOf[p], protocol.Request{Kind: protocol.Operation, Op: op}, func(r protocol.Reply) {
		if c.attempt == a {
			done(r)
		}
	})
}

// byPartition groups distinct keys by partition: the partitions in increasing order, and each
// one's keys in first-appearance order.
func (c *Client) byPartition(keys []string) (parts []int, keysOf map[int][]string) {
	keysOf = map[int][]string{}
	for _, k := range keys {
		p := tcc.PartitionOf(k, c.slots.Partitions)
		if _, ok := keysOf[p]; !ok {
			parts = append(parts, p)
		}
		keysOf[p] = append(keysOf[p], k)
	}
	slices.Sort(parts)
	return parts, keysOf
}

// rot is a read-only transaction in progress.
type rot struct {
	keys     []string // as requested, duplicates included
	parts    []int
	keysOf   map[int][]string
	r1       map[int]*MultigetSliceResp
	r2       map[int]*MultigetSliceByTimeResp
	waiting  int
	restarts int
	done     func(tcc.ReadResult)
}

// ReadTx runs a ROT (READ_ONLY_TRANS). Repeated keys are read once (spec A20); an empty ROT
// finishes at once with zero rounds and leaves vc_c alone.
func (c *Client) ReadTx(_ txn.ID, keys []string, done func(tcc.ReadResult)) {
	seen := map[string]bool{}
	var distinct []string
	for _, k := range keys {
		if !seen[k] {
			seen[k] = true
			distinct = append(distinct, k)
		}
	}
	if len(distinct) == 0 {
		done(tcc.ReadResult{Reads: []tcc.Read{}})
		return
	}
	t := &rot{keys: keys, done: done}
	t.parts, t.keysOf = c.byPartition(distinct)
	c.round1(t)
}

// round1 sends multiget_slice with vc_c to every partition of the ROT (Alg. 1 l.3–5).
func (c *Client) round1(t *rot) {
	c.attempt++
	a := c.attempt
	t.r1, t.r2, t.waiting = map[int]*MultigetSliceResp{}, map[int]*MultigetSliceByTimeResp{}, len(t.parts)
	vc := c.vc.Clone()
	for _, p := range t.parts {
		c.call(p, a, &MultigetSlice{Keys: t.keysOf[p], VC: vc}, func(r protocol.Reply) {
			resp, ok := r.Op.(*MultigetSliceResp)
			switch {
			case t.r1[p] != nil: // a duplicate
				return
			case r.Err != "" || !ok || len(resp.Versions) != len(t.keysOf[p]):
				c.failRead(t, r.Err)
				return
			}
			t.r1[p] = resp
			if t.waiting--; t.waiting == 0 {
				c.check(t)
			}
		})
	}
	c.timeout.Arm(c.tr, c.cfg.txTimeoutUs, func() {
		if c.attempt == a {
			c.restartRead(t)
		}
	})
}

// check merges every round-1 ctm into vc_c (l.8) and finds the partitions whose svc does not
// cover another partition's ctm (l.9–12, spec A7); they are read again at the merged clock.
func (c *Client) check(t *rot) {
	for _, p := range t.parts {
		c.vc.MergeFrom(t.r1[p].CTM)
	}
	var repeat []int
	for _, p := range t.parts {
		if c.cfg.skipCheck {
			break
		}
		for _, q := range t.parts {
			if q != p && !t.r1[p].SVC.Covers(t.r1[q].CTM) {
				repeat = append(repeat, p)
				break
			}
		}
	}
	if len(repeat) == 0 {
		c.finishRead(t, 1)
		return
	}
	a := c.attempt
	t.waiting = len(repeat)
	vc := c.vc.Clone()
	for _, p := range repeat {
		c.call(p, a, &MultigetSliceByTime{Keys: t.keysOf[p], VC: vc}, func(r protocol.Reply) {
			resp, ok := r.Op.(*MultigetSliceByTimeResp)
			switch {
			case t.r2[p] != nil: // a duplicate
				return
			case ok && resp.Collected:
				c.restartRead(t)
				return
			case r.Err != "" || !ok || len(resp.Versions) != len(t.keysOf[p]):
				c.failRead(t, r.Err)
				return
			}
			c.vc.MergeFrom(resp.CTM) // spec A6: a no-op, round-2 versions are ≤ vc_c
			t.r2[p] = resp
			if t.waiting--; t.waiting == 0 {
				c.finishRead(t, 2)
			}
		})
	}
}

// finishRead answers every requested position, duplicates alike: round-2 versions for the
// partitions that repeated, round-1 versions for the others.
func (c *Client) finishRead(t *rot, rounds int) {
	c.attempt++
	got := map[string]KeyVersion{}
	for _, p := range t.parts {
		vs := t.r1[p].Versions
		if r2 := t.r2[p]; r2 != nil {
			vs = r2.Versions
		}
		for _, v := range vs {
			got[v.Key] = v
		}
	}
	res := tcc.ReadResult{Reads: make([]tcc.Read, len(t.keys)), Rounds: rounds}
	for i, k := range t.keys {
		v := got[k]
		res.Reads[i] = tcc.Read{Key: k, Value: v.Value, Version: v.Writer}
	}
	t.done(res)
}

// restartRead begins the ROT again from round 1 (spec A17), or fails it after `retries`
// restarts.
func (c *Client) restartRead(t *rot) {
	if t.restarts++; t.restarts > c.cfg.retries {
		c.failRead(t, fmt.Sprintf("no snapshot after %d attempts of %dµs", t.restarts, c.cfg.txTimeoutUs))
		return
	}
	c.round1(t)
}

func (c *Client) failRead(t *rot, why string) {
	c.attempt++
	if why == "" {
		why = "malformed answer"
	}
	t.done(tcc.ReadResult{Err: errors.New("fastccs: read-only transaction failed: " + why)})
}

// wot is a write-only transaction in progress.
type wot struct {
	id       txn.ID
	reqs     map[int]*WriteReq
	parts    []int
	answered map[int]bool
	ct       VC
	retries  int
	done     func(tcc.WriteResult)
}

// WriteTx runs a WOT (WRITE_ONLY_TRANS): a WriteReq to every participant with a coordinator
// chosen uniformly among them (spec A14), then the answer of every participant (spec A10). A key
// written twice keeps its last value (A20); an empty WOT commits at once without any message.
func (c *Client) WriteTx(id txn.ID, writes []txn.Write, done func(tcc.WriteResult)) {
	ws := lastWriteWins(writes)
	if len(ws) == 0 {
		done(tcc.WriteResult{Status: txn.Committed})
		return
	}
	keys := make([]string, len(ws))
	for i, w := range ws {
		keys[i] = w.Key
	}
	parts, keysOf := c.byPartition(keys)
	value := make(map[string][]byte, len(ws))
	for _, w := range ws {
		value[w.Key] = w.Value
	}
	cp := parts[c.rnd.IntN(len(parts))]
	if c.coordinatorOf != nil {
		cp = c.coordinatorOf(parts)
	}
	c.attempt++
	t := &wot{id: id, reqs: map[int]*WriteReq{}, parts: parts, answered: map[int]bool{}, done: done}
	vc := c.vc.Clone()
	for _, p := range parts {
		req := &WriteReq{Tx: id, VC: vc, Coordinator: cp, Size: len(parts)}
		for _, k := range keysOf[p] {
			req.Writes = append(req.Writes, txn.Write{Key: k, Value: value[k]})
		}
		t.reqs[p] = req
	}
	c.sendWrites(t)
}

// sendWrites sends the WriteReq to every participant that has not answered and arms the timeout.
func (c *Client) sendWrites(t *wot) {
	a := c.attempt
	for _, p := range t.parts {
		if !t.answered[p] {
			c.call(p, a, t.reqs[p], func(r protocol.Reply) { c.onWriteResp(t, p, r) })
		}
	}
	retries := t.retries
	c.timeout.Arm(c.tr, c.cfg.txTimeoutUs, func() {
		if c.attempt != a || t.retries != retries {
			return
		}
		if t.retries++; t.retries > c.cfg.retries {
			c.attempt++
			t.done(tcc.WriteResult{Status: txn.Unknown, Err: fmt.Errorf("fastccs: %v: no answer from every participant after %d attempts", t.id, t.retries)})
			return
		}
		c.sendWrites(t)
	})
}

// onWriteResp takes participant p's answer. Once every participant has applied the transaction
// the client adopts its commit vector: vc_c := max(vc_c, ct) (Alg. 1 l.26 with spec A13).
func (c *Client) onWriteResp(t *wot, p int, r protocol.Reply) {
	resp, ok := r.Op.(*WriteResp)
	switch {
	case r.Err != "":
		// A partition refused the WriteReq, so it never voted: the transaction cannot commit.
		c.attempt++
		t.done(tcc.WriteResult{Status: txn.Aborted, Err: errors.New(r.Err)})
		return
	case !ok || resp.Tx != t.id || t.answered[p]:
		return
	case !resp.Committed:
		c.attempt++
		t.done(tcc.WriteResult{Status: txn.Aborted})
		return
	case p == t.reqs[p].Coordinator:
		if len(resp.CT) != c.slots.Len() {
			return
		}
		t.ct = resp.CT
	}
	t.answered[p] = true
	if len(t.answered) < len(t.parts) {
		return
	}
	c.attempt++
	c.vc.MergeFrom(t.ct)
	t.done(tcc.WriteResult{Status: txn.Committed})
}
