package wren

import (
	"errors"
	"math/rand/v2"
	"slices"

	"github.com/meridian-kv/meridian/protocol"
	"github.com/meridian-kv/meridian/protocol/txn"
	"github.com/meridian-kv/meridian/protocols/tcc"
)

// Client is one session's Wren library: its stable snapshot lst_c, the commit time hwt_c of its
// latest write, and its write cache. It runs one transaction at a time; every attempt has a
// number, and answers to an older attempt are ignored.
type Client struct {
	tr      tcc.Transport
	rand    *rand.Rand
	nodes   []protocol.NodeID
	prm     params
	lstC    int64
	hwtC    int64
	cache   map[string]cached
	attempt uint64
	timeout tcc.Timeout // the running attempt's
}

// cached is one of the session's own committed writes that may not be in its stable snapshot
// yet (ct > lst_c).
type cached struct {
	value  []byte
	writer txn.ID
	ct     int64
}

// NewClient builds a session's library; it implements tcc.ClientFactory.
func NewClient(cfg tcc.ClientConfig) (tcc.Client, error) {
	prm, err := parseParams(cfg.Params)
	if err != nil {
		return nil, err
	}
	if cfg.Layout == nil || cfg.DC != 0 {
		return nil, errors.New("wren: the client library runs in datacenter 0, the only one")
	}
	return &Client{tr: cfg.Transport, rand: cfg.Rand, nodes: cfg.Layout.Node[0], prm: prm, cache: map[string]cached{}}, nil
}

// LstC is the session's stable snapshot, for white-box tests.
func (c *Client) LstC() int64 { return c.lstC }

// call sends op to partition p; answers of a later attempt, or with an error, are dropped (the
// attempt's timeout restarts it).
func (c *Client) call(p int, op protocol.Message, attempt uint64, on func(protocol.Message)) {
	c.tr.CallNode(c.nodes[p], protocol.Request{Kind: protocol.Operation, Op: op}, func(r protocol.Reply) {
		if r.Err == "" && c.attempt == attempt {
			on(r.Op)
		}
	})
}

// begin starts a new attempt, restarted by retry after tx_timeout unless finished first.
func (c *Client) begin(retry func()) uint64 {
	c.attempt++
	a := c.attempt
	c.timeout.Arm(c.tr, c.prm.txTimeoutUs, func() {
		if c.attempt == a {
			retry()
		}
	})
	return a
}

// adopt moves lst_c to a stable time st and drops the cache entries it covers.
func (c *Client) adopt(st int64) {
	c.lstC = max(c.lstC, st)
	for k, e := range c.cache {
		if e.ct <= c.lstC {
			delete(c.cache, k)
		}
	}
}

// rot is one ROT: its distinct keys grouped by partition.
type rot struct {
	id    txn.ID
	keys  []string
	parts []int
	byPar map[int][]string
	done  func(tcc.ReadResult)
}

// ReadTx runs a ROT: round 1 takes a snapshot st from a coordinator partition, round 2 reads the
// partitions at st, and the write cache supplies the session's own writes newer than st.
func (c *Client) ReadTx(id txn.ID, keys []string, done func(tcc.ReadResult)) {
	t := &rot{id: id, keys: keys, done: done}
	t.parts, t.byPar = tcc.GroupKeys(keys, len(c.nodes))
	if len(keys) == 0 {
		done(tcc.ReadResult{}) // an empty ROT is a no-op (spec A20)
		return
	}
	c.snapshot(t)
}

func (c *Client) snapshot(t *rot) {
	a := c.begin(func() { c.snapshot(t) })
	coord := t.parts[c.rand.IntN(len(t.parts))]
	c.call(coord, &SnapshotReq{Tx: t.id, Lst: c.lstC}, a, func(op protocol.Message) {
		if resp, ok := op.(*SnapshotResp); ok && resp.Tx == t.id && resp.St >= c.lstC {
			c.adopt(resp.St)
			c.readAt(t, a, resp.St)
		}
	})
}

func (c *Client) readAt(t *rot, a uint64, st int64) {
	got := map[string]Item{}
	left := len(t.parts)
	for _, p := range t.parts {
		keys := t.byPar[p]
		c.call(p, &ReadReq{Tx: t.id, St: st, Keys: keys}, a, func(op protocol.Message) {
			resp, ok := op.(*ReadResp)
			switch {
			case !ok || resp.Tx != t.id:
			case resp.TooOld:
				c.adopt(resp.Lst)
				c.snapshot(t)
			case len(resp.Items) == len(keys):
				for i, it := range resp.Items {
					if it.Key != keys[i] {
						return
					}
					got[it.Key] = it
				}
				if left--; left == 0 {
					c.finishROT(t, st, got)
				}
			}
		})
	}
}

func (c *Client) finishROT(t *rot, st int64, got map[string]Item) {
	c.attempt++
	res := tcc.ReadResult{Rounds: 2, Reads: make([]tcc.Read, len(t.keys))}
	for i, k := range t.keys {
		if e, ok := c.cache[k]; ok && e.ct > st {
			res.Reads[i] = tcc.Read{Key: k, Value: e.value, Version: e.writer}
		} else {
			res.Reads[i] = tcc.Read{Key: k, Value: got[k].Value, Version: got[k].Writer}
		}
	}
	t.done(res)
}

// WriteTx runs a WOT through a coordinator chosen uniformly among its participants, retrying
// with the same id until the coordinator answers.
func (c *Client) WriteTx(id txn.ID, writes []txn.Write, done func(tcc.WriteResult)) {
	ws := make([]txn.Write, 0, len(writes))
	var parts []int
	for _, w := range writes { // the last write to a key wins (spec A20)
		if i := slices.IndexFunc(ws, func(o txn.Write) bool { return o.Key == w.Key }); i >= 0 {
			ws[i] = w
			continue
		}
		ws = append(ws, w)
		if p := tcc.PartitionOf(w.Key, len(c.nodes)); !slices.Contains(parts, p) {
			parts = append(parts, p)
		}
	}
	if len(ws) == 0 {
		done(tcc.WriteResult{Status: txn.Committed}) // an empty WOT is a no-op (spec A20)
		return
	}
	slices.Sort(parts)
	coord := parts[c.rand.IntN(len(parts))]
	c.commit(coord, &CommitReq{Tx: id, Lst: c.lstC, Hwt: c.hwtC, Writes: ws}, done)
}

func (c *Client) commit(coord int, req *CommitReq, done func(tcc.WriteResult)) {
	a := c.begin(func() { c.commit(coord, req, done) })
	c.call(coord, req, a, func(op protocol.Message) {
		resp, ok := op.(*CommitResp)
		if !ok || resp.Tx != req.Tx {
			return
		}
		c.attempt++
		if !resp.Committed {
			done(tcc.WriteResult{Status: txn.Aborted})
			return
		}
		c.hwtC = max(c.hwtC, resp.Ct)
		for _, w := range req.Writes {
			c.cache[w.Key] = cached{value: w.Value, writer: req.Tx, ct: resp.Ct}
		}
		done(tcc.WriteResult{Status: txn.Committed})
	})
}
