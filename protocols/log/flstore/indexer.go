package flstore

import (
	"bytes"
	"sort"

	"github.com/meridian-kv/meridian/protocol"
)

// posting is one indexed record of a tag.
type posting struct {
	lid   uint64
	value []byte
}

// LogIndexer maps tags to positions (spec 3.5): a posting list per tag, sorted by position.
// Maintainers send it the tags of the records they persist (IndexAdd, resent until acked).
type LogIndexer struct {
	env      protocol.Env
	postings map[string][]posting
	n        uint64 // entries indexed
}

// Handled counts the tag entries indexed.
func (x *LogIndexer) Handled() uint64 { return x.n }

// NewIndexer builds an indexer.
func NewIndexer(env protocol.Env) *LogIndexer {
	return &LogIndexer{env: env, postings: map[string][]posting{}}
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
		ps := x.postings[e.Tag]
		i := sort.Search(len(ps), func(i int) bool { return ps[i].lid >= e.LId })
		if i < len(ps) && ps[i].lid == e.LId {
			continue
		}
		ps = append(ps, posting{})
		copy(ps[i+1:], ps[i:])
		ps[i] = posting{lid: e.LId, value: e.Value}
		x.n++
		x.postings[e.Tag] = ps
	}
	x.env.Send(from, &IndexAck{Entries: add.Entries})
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
	res := &LookupResult{}
	ps := x.postings[op.Tag]
	end := sort.Search(len(ps), func(i int) bool { return ps[i].lid > op.MaxLId })
	take := func(p posting) bool {
		if op.Op.Holds(p.value, op.Value) {
			res.LIds = append(res.LIds, p.lid)
		}
		return op.Limit > 0 && len(res.LIds) >= op.Limit
	}
	if op.MostRecentFirst {
		for i := end - 1; i >= 0 && !take(ps[i]); i-- {
		}
	} else {
		for i := 0; i < end && !take(ps[i]); i++ {
		}
	}
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
