package flstore

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"sort"

	"github.com/meridian-kv/meridian/protocol"
	"github.com/meridian-kv/meridian/protocols/tcc"
)

// ClientConfig is what a log client is built from.
type ClientConfig struct {
	// AppendTo are the nodes appends go to, one at random per append until an append needs a
	// retry (see RetryUs and Failover): the batchers of the client's datacenter (Chariots) or
	// the maintainers (standalone FLStore).
	AppendTo []protocol.NodeID
	// Maintainers answer head-of-log queries (any one) and reads (their owners).
	Maintainers []protocol.NodeID
	Indexers    []protocol.NodeID
	// RetryUs resends an append without an answer after this long, to the next node of
	// AppendTo (0: never); the client then sends its appends to the node that answered the
	// retry. Chariots filters drop the copies; standalone maintainers get every request.
	RetryUs int64
	// Failover (Chariots only: its filters drop the copies of an append by client and append
	// number, CH-S5; a standalone maintainer would log a copy twice) sends appends to the
	// first node of AppendTo, and on to the next whenever a call fails (an error answer: the
	// node is down, unreachable or did not answer in time) or goes unanswered for RetryUs:
	// the append, with its append number, at once, trying each node once; the appends after
	// it stay at the node that answered. A real client (server/logclient) fails over so; the
	// simulator's clients, whose requests to a crashed node wait for it, retry after RetryUs.
	Failover bool
	Rand     *rand.Rand
	// UnsafeIgnoreCoverage takes an indexer's first answer even if it is not covered up to the
	// head of log (a negative control for CH-I9 only).
	UnsafeIgnoreCoverage bool
}

// Client is the log's client library (spec 2.2): Append, Read by position range, ReadTag, and
// Head. Its calls complete through callbacks on the transport's event loop. A client has at
// most one append in flight: append numbers increase, and Chariots filters drop a lower number
// after a higher one (a client that needs two appends ordered waits for the first anyway).
type Client struct {
	cfg       ClientConfig
	tr        tcc.Transport
	appendSeq uint64
	busy      bool
	retries   int
	target    int // index in AppendTo of the node of the last send, or of the last answer
	// sticky sends every append to target: with Failover, and once an append needed a retry
	// (the answered node is then known to work, and the one that did not answer may be down).
	sticky bool
}

// NewClient builds a client over tr.
func NewClient(cfg ClientConfig, tr tcc.Transport) *Client {
	return &Client{cfg: cfg, tr: tr, sticky: cfg.Failover}
}

// AddAppendTarget adds a node appends may go to (a new batcher, spec 5.12).
func (c *Client) AddAppendTarget(n protocol.NodeID) { c.cfg.AppendTo = append(c.cfg.AppendTo, n) }

// Retries counts the appends sent again.
func (c *Client) Retries() int { return c.retries }

// AppendSeq returns the number of the client's last append (Record.AppendSeq): with the
// client's id it names the append's record in the log.
func (c *Client) AppendSeq() uint64 { return c.appendSeq }

// ErrBusy is returned by Append while another append of the client is in flight.
var ErrBusy = errors.New("flstore: an append is already in flight")

// Append appends a record with body, tags and (optionally, nil for none) a dependency vector
// the record must follow, and calls done with its TOId and position once persisted.
func (c *Client) Append(body []byte, tags []Tag, deps []uint64, done func(AppendResult, error)) {
	c.append(&Record{Body: body, Tags: tags, WantDeps: deps}, done)
}

// AppendAfter appends a record that must get a position above minLId (an explicit order
// request, spec 3.6: standalone FLStore; the maintainer holds it until its own positions
// reach past minLId).
func (c *Client) AppendAfter(minLId uint64, body []byte, tags []Tag, done func(AppendResult, error)) {
	c.append(&Record{Body: body, Tags: tags, MinLId: minLId}, done)
}

func (c *Client) append(rec *Record, done func(AppendResult, error)) {
	if c.busy {
		done(AppendResult{}, ErrBusy)
		return
	}
	c.busy = true
	c.appendSeq++
	rec.AppendSeq = c.appendSeq
	answered, sends := false, 0
	var send func(again bool)
	send = func(again bool) {
		switch n := len(c.cfg.AppendTo); {
		case again:
			c.retries++
			c.target = (c.target + 1) % n
		case !c.sticky:
			c.target = c.cfg.Rand.IntN(n)
		}
		sends++
		this, at := sends, c.target
		c.tr.CallNode(c.cfg.AppendTo[c.target], protocol.Request{Kind: protocol.Operation, Op: &AppendOp{Record: rec}}, func(rep protocol.Reply) {
			if answered {
				return
			}
			res, ok := rep.Op.(*AppendResult)
			switch {
			case ok:
				answered, c.busy = true, false
				if sends > 1 {
					c.target, c.sticky = at, true
				}
				done(*res, nil)
			case rep.Err == "":
			case c.cfg.Failover && this == sends && sends < len(c.cfg.AppendTo):
				send(true) // the latest send failed: the next node
			case this == sends:
				answered, c.busy = true, false
				done(AppendResult{}, errors.New(rep.Err))
			}
		})
		if c.cfg.RetryUs > 0 {
			c.tr.After(c.cfg.RetryUs, func() {
				if !answered && this == sends {
					send(true)
				}
			})
		}
	}
	send(false)
}

// Head asks a random maintainer for the head of the log and the epoch journal.
func (c *Client) Head(done func(HLResult, error)) {
	m := c.cfg.Maintainers[c.cfg.Rand.IntN(len(c.cfg.Maintainers))]
	c.tr.CallNode(m, protocol.Request{Kind: protocol.Operation, Op: &HLQuery{}}, func(rep protocol.Reply) {
		res, ok := rep.Op.(*HLResult)
		if !ok || !res.Journal.Valid() {
			done(HLResult{}, fmt.Errorf("flstore: head of log: %s", rep.Err))
			return
		}
		done(*res, nil)
	})
}

// Read returns the records at positions [from, to] up to the head of the log, in position
// order, without no-op fillers.
func (c *Client) Read(from, to uint64, done func([]*Record, error)) {
	c.Head(func(h HLResult, err error) {
		if err != nil {
			done(nil, err)
			return
		}
		to = min(to, h.HL)
		if from > to {
			done(nil, nil)
			return
		}
		owners := map[protocol.NodeID]bool{}
		var list []protocol.NodeID
		for l := max(from, 1); l <= to; l = nextRange(h.Journal, l) {
			if o := h.Journal.Owner(l); !owners[o] {
				owners[o] = true
				list = append(list, o)
			}
			if len(list) == len(allMaintainers(h.Journal)) {
				break
			}
		}
		c.gather(list, &ReadOp{From: from, To: to, HL: h.HL}, done)
	})
}

// nextRange returns the first position of the range after the one holding l.
func nextRange(j Journal, l uint64) uint64 {
	ep := j[j.epochOf(l)]
	return ep.StartLId + ((l-ep.StartLId)/ep.B+1)*ep.B
}

func allMaintainers(j Journal) map[protocol.NodeID]bool {
	all := map[protocol.NodeID]bool{}
	for _, e := range j {
		for _, m := range e.Maintainers {
			all[m] = true
		}
	}
	return all
}

// gather sends op to every node of list and returns the records of all answers, by position.
func (c *Client) gather(list []protocol.NodeID, op *ReadOp, done func([]*Record, error)) {
	var out []*Record
	left, failed := len(list), false
	for _, m := range list {
		c.tr.CallNode(m, protocol.Request{Kind: protocol.Operation, Op: op}, func(rep protocol.Reply) {
			res, ok := rep.Op.(*ReadResult)
			if failed {
				return
			}
			if !ok {
				failed = true
				done(nil, fmt.Errorf("flstore: read: %s", rep.Err))
				return
			}
			for _, r := range res.Records {
				if !r.NoOp {
					out = append(out, r)
				}
			}
			if left--; left == 0 {
				sort.Slice(out, func(i, j int) bool { return out[i].LId < out[j].LId })
				done(out, nil)
			}
		})
	}
}

// ReadTag returns the records tagged name whose value satisfies (op, value), up to the head of
// the log, at most limit (0: all), the most recent first if asked. Indexers learn tags
// asynchronously, so a record just appended may be missing for a moment.
func (c *Client) ReadTag(name string, op Compare, value []byte, limit int, mostRecentFirst bool, done func([]*Record, error)) {
	c.Head(func(h HLResult, err error) {
		if err != nil {
			done(nil, err)
			return
		}
		c.ReadTagAt(h, name, op, value, limit, mostRecentFirst, done)
	})
}

// lookupTries bounds the lookups of one ReadTagAt, lookupRetryUs apart, while the indexer is
// not yet covered up to the head of log (its maintainers send their entries every gossip
// period).
const (
	lookupTries   = 1000
	lookupRetryUs = 1000
)

// lookup asks op's indexer until its answer is covered up to op.MaxLId, at most tries times.
func (c *Client) lookup(op *LookupOp, tries int, done func(*LookupResult, error)) {
	c.tr.CallNode(IndexerOf(op.Tag, c.cfg.Indexers), protocol.Request{Kind: protocol.Operation, Op: op}, func(rep protocol.Reply) {
		res, ok := rep.Op.(*LookupResult)
		switch {
		case !ok:
			done(nil, fmt.Errorf("flstore: lookup: %s", rep.Err))
		case res.Covered || c.cfg.UnsafeIgnoreCoverage:
			done(res, nil)
		case tries <= 1:
			done(nil, fmt.Errorf("flstore: lookup of %q: the indexer is not covered up to position %d", op.Tag, op.MaxLId))
		default:
			c.tr.After(lookupRetryUs, func() { c.lookup(op, tries-1, done) })
		}
	})
}

// ReadTagAt is ReadTag as of head of log h (h.HL at most a head of log some maintainer
// reported, h.Journal its journal): positions above h.HL are not returned.
func (c *Client) ReadTagAt(h HLResult, name string, op Compare, value []byte, limit int, mostRecentFirst bool, done func([]*Record, error)) {
	if len(c.cfg.Indexers) == 0 {
		done(nil, errors.New("flstore: no indexer"))
		return
	}
	look := &LookupOp{Tag: name, Op: op, Value: value, MaxLId: h.HL, Limit: limit, MostRecentFirst: mostRecentFirst, Journal: h.Journal}
	c.lookup(look, lookupTries, func(res *LookupResult, err error) {
		if err != nil {
			done(nil, err)
			return
		}
		if len(res.LIds) == 0 {
			done(nil, nil)
			return
		}
		out := make([]*Record, len(res.LIds))
		left, failed := len(res.LIds), false
		for i, l := range res.LIds {
			c.tr.CallNode(h.Journal.Owner(l), protocol.Request{Kind: protocol.Operation, Op: &ReadOp{From: l, To: l, HL: h.HL}}, func(rep protocol.Reply) {
				rr, ok := rep.Op.(*ReadResult)
				if failed {
					return
				}
				if !ok || len(rr.Records) != 1 {
					failed = true
					done(nil, fmt.Errorf("flstore: read of tagged position %d: %s", l, rep.Err))
					return
				}
				out[i] = rr.Records[0]
				if left--; left == 0 {
					done(out, nil)
				}
			})
		}
	})
}
