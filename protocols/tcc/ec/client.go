package ec

import (
	"errors"
	"slices"

	"github.com/meridian-kv/meridian/protocol"
	"github.com/meridian-kv/meridian/protocol/txn"
	"github.com/meridian-kv/meridian/protocols/tcc"
)

// Client is one session's EC library: it only stamps writes and fans requests out.
type Client struct {
	tr        tcc.Transport
	nodes     []protocol.NodeID
	timeoutUs int64
	lastTs    int64
	timeout   tcc.Timeout // the running transaction's resend
}

// NewClient builds a session's library; it implements tcc.ClientFactory.
func NewClient(cfg tcc.ClientConfig) (tcc.Client, error) {
	timeoutUs, err := parseTimeout(cfg.Params)
	if err != nil {
		return nil, err
	}
	if cfg.Layout == nil || cfg.DC != 0 {
		return nil, errors.New("ec: the client library runs in datacenter 0, the only one")
	}
	return &Client{tr: cfg.Transport, nodes: cfg.Layout.Node[0], timeoutUs: timeoutUs}, nil
}

// fanout sends req(p) to every partition p of parts, passes each answer to accept (which says
// whether it is the awaited one), resends to the partitions that have not answered every
// tx_timeout, and calls finish once all have.
func (c *Client) fanout(parts []int, req func(p int) protocol.Message, accept func(p int, op protocol.Message) bool, finish func()) {
	answered := make([]bool, len(parts))
	left := len(parts)
	var send func()
	send = func() {
		if left == 0 {
			return
		}
		for i, p := range parts {
			if answered[i] {
				continue
			}
			c.tr.CallNode(c.nodes[p], protocol.Request{Kind: protocol.Operation, Op: req(p)}, func(r protocol.Reply) {
				if r.Err != "" || answered[i] || left == 0 || !accept(p, r.Op) {
					return
				}
				answered[i] = true
				if left--; left == 0 {
					finish()
				}
			})
		}
		c.timeout.Arm(c.tr, c.timeoutUs, send)
	}
	send()
}

// ReadTx reads every partition's current values of keys in one round.
func (c *Client) ReadTx(id txn.ID, keys []string, done func(tcc.ReadResult)) {
	if len(keys) == 0 {
		done(tcc.ReadResult{}) // an empty ROT is a no-op
		return
	}
	parts, byPart := tcc.GroupKeys(keys, len(c.nodes))
	got := map[string]Item{}
	c.fanout(parts, func(p int) protocol.Message { return &ReadReq{Tx: id, Keys: byPart[p]} },
		func(p int, op protocol.Message) bool {
			resp, ok := op.(*ReadResp)
			if !ok || resp.Tx != id || len(resp.Items) != len(byPart[p]) {
				return false
			}
			for i, it := range resp.Items {
				if it.Key != byPart[p][i] {
					return false
				}
			}
			for _, it := range resp.Items {
				got[it.Key] = it
			}
			return true
		},
		func() {
			res := tcc.ReadResult{Rounds: 1, Reads: make([]tcc.Read, len(keys))}
			for i, k := range keys {
				res.Reads[i] = tcc.Read{Key: k, Value: got[k].Value, Version: got[k].Writer}
			}
			done(res)
		})
}

// WriteTx writes each partition's share in one round, stamped with the client's clock (made
// strictly increasing per session), and reports committed once every partition acknowledged.
func (c *Client) WriteTx(id txn.ID, writes []txn.Write, done func(tcc.WriteResult)) {
	ws := make([]txn.Write, 0, len(writes))
	for _, w := range writes { // the last write to a key wins
		if i := slices.IndexFunc(ws, func(o txn.Write) bool { return o.Key == w.Key }); i >= 0 {
			ws[i] = w
		} else {
			ws = append(ws, w)
		}
	}
	if len(ws) == 0 {
		done(tcc.WriteResult{Status: txn.Committed}) // an empty WOT is a no-op
		return
	}
	c.lastTs = max(c.tr.NowUs(), c.lastTs+1)
	ts := c.lastTs
	keys := make([]string, len(ws))
	for i, w := range ws {
		keys[i] = w.Key
	}
	parts, byPart := tcc.GroupKeys(keys, len(c.nodes))
	share := func(p int) protocol.Message {
		m := &WriteReq{Tx: id, Ts: ts}
		for _, w := range ws {
			if slices.Contains(byPart[p], w.Key) {
				m.Writes = append(m.Writes, w)
			}
		}
		return m
	}
	c.fanout(parts, share,
		func(_ int, op protocol.Message) bool {
			resp, ok := op.(*WriteResp)
			return ok && resp.Tx == id
		},
		func() { done(tcc.WriteResult{Status: txn.Committed}) })
}
