// Package logclient is the Go client of a shared log (the registry's Log family: flstore,
// chariots) running on real nodes: the log's client library (flstore.Client) in this process,
// talking to one datacenter's stage machines over the Operate RPC (rpc.NodeConns), with
// blocking calls: Append, Read (a range of positions), ReadTag and Head.
//
// The client registers with one node of its datacenter, its home: a Chariots batcher, where it
// sends its appends (the maintainer that persists a record answers, and its node relays the
// answer to the batcher that took the append, see server/relay.go), or a standalone FLStore
// maintainer. When a call to its batcher fails (the batcher is down, or did not answer within
// the call timeout) the client fails over to the next active batcher of its datacenter,
// registering the same client id there, and sends the same append again with the same append
// number, so the filter drops the copy if the first one got through (exactly once, CH-S5); it
// keeps appending there (flstore.ClientConfig.Failover). If the first copy did get through, its
// answer went to the batcher that failed and the copy gets none; an append whose calls all failed
// (a maintainer down, too) is looked for in the log by its client id and append number, from
// after the client's last acknowledged append to the head of the log, until the caller's
// context ends: found, it succeeded; else it ends in the call's error, its outcome unknown. Reads go to the maintainers owning the
// positions, head-of-log queries to any active maintainer, and tag lookups to the tag's
// indexer. Put and GetTxn are Hyksos (package hyksos), the key-value store on the log.
package logclient

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"google.golang.org/grpc"

	"github.com/meridian-kv/meridian/protocol"
	"github.com/meridian-kv/meridian/protocols/log/chariots"
	"github.com/meridian-kv/meridian/protocols/log/flstore"
	"github.com/meridian-kv/meridian/protocols/log/hyksos"
	"github.com/meridian-kv/meridian/protocols/registry"
	"github.com/meridian-kv/meridian/server/cluster"
	"github.com/meridian-kv/meridian/server/rpc"
)

// layouts compute a log protocol's layout from its parameters and the number of datacenters.
var layouts = map[string]func(protocol.Params, int) (*flstore.Layout, error){
	"flstore":  flstore.StandaloneLayout,
	"chariots": chariots.LayoutOf,
}

// Client is one log client of one datacenter. Its methods may be called from several
// goroutines; appends are serialized (the library has one append in flight).
type Client struct {
	conns *rpc.NodeConns
	tr    *rpc.TCCTransport
	lib   *flstore.Client
	kv    *hyksos.Store // Hyksos over lib
	dcs   int           // datacenters of the cluster: the length of a dependency vector
	appMu chan struct{} // a one-slot semaphore: one append at a time
	// chariots: appends go through batchers, and a failed one may be in the log (findAppend).
	chariots bool
	dc       int    // the client's datacenter, a record's Host
	lastLId  uint64 // position of the client's last acknowledged append (on the callback goroutine)
	found    atomic.Int64
}

// Dial connects a client to datacenter dc (a name of the cluster's topology; "" is the
// first) of the log cluster cfg, registering with its home node within ctx. opts must name the
// transport security, as for rpc.Dial. A Chariots client's home is the datacenter's first
// batcher; it fails over to the others, the spare batchers that joined (cluster.Added) last.
func Dial(ctx context.Context, cfg *cluster.Config, dc string, opts ...grpc.DialOption) (*Client, error) {
	return DialVia(ctx, cfg, dc, "", opts...)
}

// DialVia is Dial with home node via (a batcher of datacenter dc, active or joined), or the
// first batcher if via is "".
func DialVia(ctx context.Context, cfg *cluster.Config, dc, via string, opts ...grpc.DialOption) (*Client, error) {
	entry, err := registry.Lookup(cfg.Protocol)
	if err != nil {
		return nil, err
	}
	layoutOf, ok := layouts[cfg.Protocol]
	if !ok || entry.Family != registry.Log {
		return nil, fmt.Errorf("cluster %s runs %s, not a shared log (flstore, chariots)", cfg.Path, cfg.Protocol)
	}
	dcIndex := 0
	if dc != "" {
		if dcIndex = slices.Index(cfg.Topology.DCs, dc); dcIndex < 0 {
			return nil, fmt.Errorf("cluster %s has no datacenter %q (it has %s)", cfg.Path, dc, strings.Join(cfg.Topology.DCs, ", "))
		}
	}
	l, err := layoutOf(cfg.Params, cfg.Topology.N())
	if err != nil {
		return nil, fmt.Errorf("%s: %w", cfg.Path, err)
	}
	if err := l.Check(cfg.Placements()); err != nil {
		return nil, fmt.Errorf("%s: %w", cfg.Path, err)
	}
	lc := flstore.ClientConfig{Maintainers: l.Active(dcIndex, flstore.Maintainer), Indexers: l.Active(dcIndex, flstore.Indexer)}
	var home protocol.NodeID
	if batchers := l.Active(dcIndex, flstore.Batcher); len(batchers) > 0 {
		// Appends go to the home batcher, and on to the next when it fails (the answer is
		// relayed to the batcher that took the append: flstore.AppendResult.RelayTo).
		if batchers, err = withJoined(cfg, l, dcIndex, batchers, via); err != nil {
			return nil, err
		}
		home = batchers[0]
		lc.AppendTo, lc.Failover = batchers, true
	} else {
		home = lc.Maintainers[0]
		lc.AppendTo = lc.Maintainers
	}
	addrs := map[protocol.NodeID]string{}
	for i, n := range l.Nodes {
		if n.DC == dcIndex {
			addrs[protocol.NodeID(i)] = cfg.Nodes[i].ClientAddr
		}
	}
	conns, err := rpc.DialNodes(addrs, entry.Codec, opts...)
	if err != nil {
		return nil, err
	}
	tr, err := conns.NewTransport(ctx, home)
	if err != nil {
		conns.Close()
		return nil, fmt.Errorf("cannot register with %s of datacenter %s: %w", cfg.Nodes[home].Name, cfg.Topology.DCs[dcIndex], err)
	}
	lc.Rand = rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), uint64(tr.ClientID())))
	lib := flstore.NewClient(lc, tr)
	return &Client{conns: conns, tr: tr, lib: lib, kv: hyksos.New(lib), dcs: cfg.Topology.N(), appMu: make(chan struct{}, 1),
		chariots: lc.Failover, dc: dcIndex}, nil
}

// SetCallTimeout bounds every RPC the client makes (see rpc.NodeConns.SetCallTimeout).
func (c *Client) SetCallTimeout(d time.Duration) { c.conns.SetCallTimeout(d) }

// Close closes the connections.
func (c *Client) Close() error { return c.conns.Close() }

// ErrTimeout is returned when ctx ends before the answer: the operation may still take effect
// (an append then stays in the log, unacknowledged).
var ErrTimeout = errors.New("logclient: no answer in time; the operation may still take effect")

// await runs start on the library's event loop (the transport's callback goroutine) and waits
// for its result or the end of ctx.
func await[R any](ctx context.Context, c *Client, start func(done func(R, error))) (R, error) {
	type result struct {
		r   R
		err error
	}
	ch := make(chan result, 1)
	c.tr.After(0, func() { start(func(r R, err error) { ch <- result{r, err} }) })
	select {
	case res := <-ch:
		return res.r, res.err
	case <-ctx.Done():
		var zero R
		return zero, fmt.Errorf("%w (%v)", ErrTimeout, ctx.Err())
	}
}

// Append appends a record with body and tags after the records deps names (nil: none; else
// one TOId per datacenter, Chariots only) and returns its TOId and position in this
// datacenter's log, once the record is durable at its maintainer.
func (c *Client) Append(ctx context.Context, body []byte, tags []flstore.Tag, deps []uint64) (flstore.AppendResult, error) {
	if deps != nil && len(deps) != c.dcs {
		return flstore.AppendResult{}, fmt.Errorf("logclient: a dependency vector has one TOId per datacenter (%d), not %d", c.dcs, len(deps))
	}
	return c.serialAppend(ctx, func(done func(flstore.AppendResult, error)) { c.lib.Append(body, tags, deps, done) })
}

// serialAppend runs start, an append of the library, when no other append is in flight. A
// Chariots append that failed while ctx lasts is looked for in the log (findAppend): found, it
// succeeded.
func (c *Client) serialAppend(ctx context.Context, start func(done func(flstore.AppendResult, error))) (flstore.AppendResult, error) {
	select {
	case c.appMu <- struct{}{}:
	case <-ctx.Done():
		return flstore.AppendResult{}, fmt.Errorf("%w (%v)", ErrTimeout, ctx.Err())
	}
	type attempt struct {
		res          flstore.AppendResult
		err          error
		seq, lastLId uint64 // the append's number; the position of the client's last append before it
	}
	ch := make(chan attempt, 1)
	c.tr.After(0, func() {
		a := attempt{seq: c.lib.AppendSeq() + 1, lastLId: c.lastLId} // the library numbers this append next
		start(func(r flstore.AppendResult, err error) {
			if err == nil {
				c.lastLId = max(c.lastLId, r.LId)
			}
			a.res, a.err = r, err
			ch <- a
			<-c.appMu // released when the library is free again, even after ctx ended
		})
	})
	var a attempt
	select {
	case a = <-ch:
	case <-ctx.Done():
		return flstore.AppendResult{}, fmt.Errorf("%w (%v)", ErrTimeout, ctx.Err())
	}
	if a.err == nil || !c.chariots {
		return a.res, a.err
	}
	if res, ok := c.findAppend(ctx, a.seq, a.lastLId); ok {
		c.found.Add(1)
		return res, nil
	}
	return a.res, a.err
}

// Found counts the appends whose calls failed and that findAppend found in the log.
func (c *Client) Found() int { return int(c.found.Load()) }

// findScanMax bounds the positions findAppend reads (the last ones up to the head of the log).
const findScanMax = 10_000

// findAppend looks for the record of the client's append number seq in its datacenter's log,
// from after from (the position of its last acknowledged append) up to the head of the log,
// again as the head moves, until ctx ends. The failed call may have carried the append past the batcher (or another copy
// did, after a failover): the filter logs it once, and its answer went to a batcher that is
// gone; found, it names the append's position and TOId.
func (c *Client) findAppend(ctx context.Context, seq, from uint64) (flstore.AppendResult, bool) {
	id := c.tr.ClientID()
	for ctx.Err() == nil {
		h, err := c.Head(ctx)
		if err == nil && h.HL > from {
			lo := max(from+1, h.HL-min(h.HL, findScanMax)+1)
			recs, err := c.Read(ctx, lo, h.HL)
			if err == nil {
				for _, r := range recs {
					if r.Client == id && r.AppendSeq == seq && r.Host == c.dc {
						return flstore.AppendResult{TOId: r.TOId, LId: r.LId}, true
					}
				}
				from = h.HL
			}
		}
		select {
		case <-ctx.Done():
		case <-time.After(100 * time.Millisecond):
		}
	}
	return flstore.AppendResult{}, false
}

// Put writes value to key in Hyksos, the key-value store on the log (spec 6.1: an append
// tagged with the key), and returns the put's TOId and position once it is durable.
func (c *Client) Put(ctx context.Context, key string, value []byte) (flstore.AppendResult, error) {
	return c.serialAppend(ctx, func(done func(flstore.AppendResult, error)) { c.kv.Put(key, value, done) })
}

// Snapshot is what a Hyksos GET_TXN read: as of head of log HL, Reads[i] for the i-th key (a
// zero Read: no put to it up to HL).
type Snapshot struct {
	HL    uint64
	Reads []hyksos.Read
}

// GetTxn reads keys from one snapshot of Hyksos (the source's GET_TXN): each key's latest put
// up to one head of the log of the client's datacenter. A get is a GetTxn of one key.
func (c *Client) GetTxn(ctx context.Context, keys []string) (Snapshot, error) {
	return await(ctx, c, func(done func(Snapshot, error)) {
		c.kv.GetTxn(keys, func(rs []hyksos.Read, hl uint64, err error) { done(Snapshot{HL: hl, Reads: rs}, err) })
	})
}

// Head returns the head of the log (every position up to it is filled) and the epoch journal.
func (c *Client) Head(ctx context.Context) (flstore.HLResult, error) {
	return await(ctx, c, c.lib.Head)
}

// readChunk is how many positions one read asks for: an answer stays well within gRPC's 4 MiB
// message limit for records of up to a few kilobytes.
const readChunk = 1000

// Read returns the records at positions [from, to] up to the head of the log, in position
// order, without no-op fillers. A long range is read readChunk positions at a time.
func (c *Client) Read(ctx context.Context, from, to uint64) ([]*flstore.Record, error) {
	h, err := c.Head(ctx)
	if err != nil {
		return nil, err
	}
	var out []*flstore.Record
	for lo := max(from, 1); lo <= min(to, h.HL); lo += readChunk {
		hi := min(to, h.HL, lo+readChunk-1)
		recs, err := await(ctx, c, func(done func([]*flstore.Record, error)) { c.lib.Read(lo, hi, done) })
		if err != nil {
			return nil, err
		}
		out = append(out, recs...)
	}
	return out, nil
}

// ReadTag returns the records tagged name whose value satisfies (op, value), up to the head of
// the log, at most limit (0: all), the most recent first if asked.
func (c *Client) ReadTag(ctx context.Context, name string, op flstore.Compare, value []byte, limit int, mostRecentFirst bool) ([]*flstore.Record, error) {
	return await(ctx, c, func(done func([]*flstore.Record, error)) {
		c.lib.ReadTag(name, op, value, limit, mostRecentFirst, done)
	})
}
