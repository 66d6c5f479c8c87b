package flstore

import (
	"bytes"

	"github.com/meridian-kv/meridian/protocol"
)

// LogIndexer maps tags to positions (spec 3.5): a posting list per tag, sorted by position, on
// its Disk (diskPostings), written in the batch that logs the IndexAdd which brought the
// entries, so that its checkpoint holds only the claims and does not grow with the log.
// Maintainers send it the tags of the records they persist (IndexAdd, resent until acked),
// with a claim of how far they have sent them all (claims), so that a lookup can tell whether
// an entry up to its head of log may still be on its way (LookupResult.Covered; CH-I9: a
// Hyksos GET_TXN must see the latest put up to its head of log).
type LogIndexer struct {
	env      protocol.Env
	postings diskPostings
	claims   map[protocol.NodeID]indexClaim
	// n counts the entries received (a resent one again): writing one is idempotent, and the
	// count must not depend on what the Disk holds (protocol.Disk: replays).
	n uint64
}

// indexClaim is a maintainer's newest IndexAdd claim: its entries up to through, under the
// first epochs epochs of the journal, are all here.
type indexClaim struct {
	through uint64
	epochs  int
}

// Handled counts the tag entries received.
func (x *LogIndexer) Handled() uint64 { return x.n }

// NewIndexer builds an indexer.
func NewIndexer(env protocol.Env) *LogIndexer {
	return &LogIndexer{env: env, postings: diskPostings{protocol.DiskOf(env)}, claims: map[protocol.NodeID]indexClaim{}}
}

// Start does nothing: an indexer only answers.
func (x *LogIndexer) Start() {}

// HandleTimer ignores timers: an indexer sets none.
func (x *LogIndexer) HandleTimer(protocol.TimerID) {}

// HandleMessage adds entries (idempotently) and acknowledges them.
func (x *LogIndexer) HandleMessage(from protocol.NodeID, m protocol.Message) {
	add, ok := m.(*IndexAdd)
	if !ok {
		return
	}
	for _, e := range add.Entries {
		x.postings.put(e)
		x.n++
	}
	if add.Through > 0 && add.Epochs > 0 {
		c := x.claims[from]
		if add.Epochs > c.epochs || (add.Epochs == c.epochs && add.Through > c.through) {
			x.claims[from] = indexClaim{through: add.Through, epochs: add.Epochs}
		}
	}
	x.env.Send(from, &IndexAck{Entries: add.Entries, Through: add.Through, Epochs: add.Epochs})
}

// covered reports whether every maintainer of journal j has claimed its entries up to maxLId.
// A claim made under fewer epochs than j has covers only the positions before the first epoch
// it did not know: later positions were not yet assigned when it was made.
func (x *LogIndexer) covered(j Journal, maxLId uint64) bool {
	if !j.Valid() {
		return false
	}
	seen := map[protocol.NodeID]bool{}
	for _, e := range j {
		for _, m := range e.Maintainers {
			if seen[m] {
				continue
			}
			seen[m] = true
			c := x.claims[m]
			through := c.through
			if c.epochs < len(j) {
				through = min(through, j[c.epochs].StartLId-1)
			}
			if through < maxLId {
				return false
			}
		}
	}
	return true
}

// HandleRequest answers a lookup.
func (x *LogIndexer) HandleRequest(req protocol.Request) {
	reply := protocol.Reply{Client: req.Client, Seq: req.Seq}
	op, ok := req.Op.(*LookupOp)
	if !ok {
		reply.Err = "flstore: an indexer answers lookups only"
		x.env.Reply(reply)
		return
	}
	res := &LookupResult{Covered: x.covered(op.Journal, op.MaxLId)}
	x.postings.scan(op.Tag, op.MaxLId, op.MostRecentFirst, func(lid uint64, value []byte) bool {
		if op.Op.Holds(value, op.Value) {
			res.LIds = append(res.LIds, lid)
		}
		return op.Limit <= 0 || len(res.LIds) < op.Limit
	})
	reply.Op = res
	x.env.Reply(reply)
}

// Holds reports whether value v satisfies the predicate against w (byte-wise comparison).
func (c Compare) Holds(v, w []byte) bool {
	d := bytes.Compare(v, w)
	switch c {
	case Eq:
		return d == 0
	case Lt:
		return d < 0
	case Le:
		return d <= 0
	case Gt:
		return d > 0
	case Ge:
		return d >= 0
	}
	return true
}
