package sdur

import (
	"errors"
	"slices"

	"github.com/meridian-kv/meridian/protocol"
	"github.com/meridian-kv/meridian/protocol/txn"
	"github.com/meridian-kv/meridian/protocols/partitioned"
)

// Client is S-DUR's client library (Alg. 1, spec §3.3): it reads each partition's keys from the
// replica of that partition nearest to the client, all at one snapshot (the first read there
// fixes it, and later reads go to the same server), buffers writes, and sends COMMIT with one
// slice per partition to the preferred server of its home partition if the transaction touched
// it, else of the lowest partition it touched. A read-only transaction asks the nearest server
// of its home partition for the latest published snapshot at begin and reads every partition at
// it; it commits without certification.
type Client struct {
	cfg  partitioned.ClientConfig
	home int

	id     txn.ID
	ro     bool
	snap   []uint64                // read-only: the snapshot
	st     map[int]uint64          // update: each partition's snapshot, once fixed
	server map[int]protocol.NodeID // the server each partition's reads go to
	rs     map[int][]string        // keys read, per partition
	ws     map[int][]txn.Write     // writes, per partition
	reads  []txn.Read
}

// NewClient is S-DUR's partitioned.ClientFactory.
func NewClient(cfg partitioned.ClientConfig) (partitioned.Client, error) {
	if _, err := parse(cfg.Params, nil); err != nil {
		return nil, err
	}
	if cfg.Placement == nil || cfg.Transport == nil || cfg.Topology == nil || cfg.DC < 0 || cfg.DC >= cfg.Topology.N() {
		return nil, errors.New("sdur: client needs a placement, a transport and a datacenter of the topology")
	}
	return &Client{cfg: cfg, home: cfg.Placement.HomePartition(cfg.Topology, cfg.DC)}, nil
}

// Home is the client's home partition.
func (c *Client) Home() int { return c.home }

// Begin implements partitioned.Client.
func (c *Client) Begin(id txn.ID, readOnly bool, done func(error)) {
	c.id, c.ro, c.snap, c.reads = id, readOnly, nil, nil
	c.st, c.server, c.rs, c.ws = map[int]uint64{}, map[int]protocol.NodeID{}, map[int][]string{}, map[int][]txn.Write{}
	if !readOnly {
		done(nil)
		return
	}
	near := c.cfg.Placement.Nearest(c.cfg.Topology, c.home, c.cfg.DC)
	c.cfg.Transport.CallNode(near, protocol.Request{Kind: protocol.Operation, Op: &SnapReq{}}, func(r protocol.Reply) {
		sr, ok := r.Op.(*SnapReply)
		switch {
		case r.Err != "":
			done(errors.New(r.Err))
		case !ok || len(sr.S) != c.cfg.Placement.Partitions():
			done(errors.New("sdur: malformed snapshot reply"))
		default:
			c.snap = sr.S
			done(nil)
		}
	})
}

// Read implements partitioned.Client.
func (c *Client) Read(key string, done func([]byte, txn.ID, error)) {
	p := partitioned.PartitionOf(key, c.cfg.Placement.Partitions())
	if i := slices.IndexFunc(c.ws[p], func(w txn.Write) bool { return w.Key == key }); i >= 0 {
		done(c.ws[p][i].Value, c.id, nil)
		return
	}
	req := &ReadReq{Tx: c.id, Key: key}
	to, ok := c.server[p]
	if !ok {
		to = c.cfg.Placement.Nearest(c.cfg.Topology, p, c.cfg.DC)
	}
	switch {
	case c.ro:
		req.St, req.HasSt = c.snap[p], true
	case ok:
		req.St, req.HasSt = c.st[p], true
	}
	c.cfg.Transport.CallNode(to, protocol.Request{Kind: protocol.Operation, Op: req, TxnID: c.id}, func(r protocol.Reply) {
		rr, isRead := r.Op.(*ReadReply)
		if r.Err != "" || !isRead {
			done(nil, txn.None, errors.New("sdur: read of "+key+" failed: "+r.Err))
			return
		}
		if _, fixed := c.server[p]; !fixed {
			c.server[p], c.st[p] = to, rr.St
		}
		if !slices.Contains(c.rs[p], key) {
			c.rs[p] = append(c.rs[p], key)
			c.reads = append(c.reads, txn.Read{Key: key, Version: rr.Version})
		}
		done(rr.Value, rr.Version, nil)
	})
}

// Write implements partitioned.Client: a key the transaction has not read is read first.
func (c *Client) Write(key string, value []byte, done func(error)) {
	if c.ro {
		done(errors.New("sdur: write in a read-only transaction"))
		return
	}
	p := partitioned.PartitionOf(key, c.cfg.Placement.Partitions())
	buffer := func() {
		if i := slices.IndexFunc(c.ws[p], func(w txn.Write) bool { return w.Key == key }); i >= 0 {
			c.ws[p][i].Value = value
		} else {
			c.ws[p] = append(c.ws[p], txn.Write{Key: key, Value: value})
		}
		done(nil)
	}
	if slices.Contains(c.rs[p], key) {
		buffer()
		return
	}
	c.Read(key, func(_ []byte, _ txn.ID, err error) {
		if err != nil {
			done(err)
			return
		}
		buffer()
	})
}

// Commit implements partitioned.Client.
func (c *Client) Commit(done func(txn.Status, txn.AbortReason, error)) {
	if c.ro || len(c.rs) == 0 {
		done(txn.Committed, "", nil)
		return
	}
	parts := c.Partitions()
	op := &CommitReq{Tx: c.id}
	for _, p := range parts {
		op.Slices = append(op.Slices, Slice{Part: p, RS: c.rs[p], WS: c.ws[p], St: c.st[p]})
	}
	coord := parts[0]
	if slices.Contains(parts, c.home) {
		coord = c.home
	}
	c.cfg.Transport.CallNode(c.cfg.Placement.Preferred(coord), protocol.Request{Kind: protocol.Operation, Op: op, TxnID: c.id}, func(r protocol.Reply) {
		out, ok := r.Op.(*CommitReply)
		if r.Err != "" || !ok {
			done(txn.Unknown, "", errors.New("sdur: commit failed: "+r.Err))
			return
		}
		done(out.Status, out.Reason, nil)
	})
}

// Reads implements partitioned.Client.
func (c *Client) Reads() []txn.Read { return c.reads }

// Partitions returns the partitions the current transaction touched, increasing.
func (c *Client) Partitions() []int {
	parts := make([]int, 0, len(c.rs))
	for p := range c.rs {
		parts = append(parts, p)
	}
	slices.Sort(parts)
	return parts
}
