package logsim

import (
	"fmt"

	"github.com/meridian-kv/meridian/protocol/txn"
	"github.com/meridian-kv/meridian/protocols/log/chariots"
	"github.com/meridian-kv/meridian/protocols/log/flstore"
	"github.com/meridian-kv/meridian/protocols/log/hyksos"
	"github.com/meridian-kv/meridian/sim"
)

// HyksosWorkload makes the run's clients Hyksos clients (spec 6.1) instead of plain appenders:
// each operation is a put of a unique value to one of Keys keys (PutProb), a GET_TXN of TxnKeys
// distinct keys (TxnProb), or a get of one key (the rest), keys drawn uniformly.
type HyksosWorkload struct {
	Keys             int
	PutProb, TxnProb float64
	TxnKeys          int
	// UnsafeIgnoreCoverage makes the clients read indexers that may lag (negative control).
	UnsafeIgnoreCoverage bool
}

// putID names a put by its client's append: the client and its append number.
type putID struct {
	client txn.ClientID
	seq    uint64
}

// keyValue is what a put wrote.
type keyValue struct {
	key   string
	value []byte
}

// hyksosRun is the Hyksos clients' record of a run: their reads, and every put they issued (a
// collected put has lost its tags and body in the logs, so the check looks it up here).
type hyksosRun struct {
	reads []hyksos.Observed
	puts  map[putID]keyValue
	// restarts counts GET_TXNs taken again because a put they needed was collected.
	restarts int
}

// HyksosKey is the name of key k.
func HyksosKey(k int) string { return fmt.Sprintf("key%d", k) }

// startHyksosClient runs client id (connection c, log client cl) of datacenter dc as a
// Hyksos client: think, operate, repeat. A put is an append (checked like any append, with
// every put the client read before it as its causal past); reads are checked at the end
// (checkHyksos).
func (r *run) startHyksosClient(c *sim.Conn, cl *flstore.Client, id txn.ClientID, dc int) {
	w := r.o.Hyksos
	st := hyksos.New(cl)
	if r.hyk.puts == nil {
		r.hyk.puts = map[putID]keyValue{}
	}
	var puts uint64   // the client's appends, numbered as flstore.Client numbers them
	var seen []uint64 // positions (in dc's log) of the puts this client read
	var next func()
	next = func() {
		if c.NowUs() >= r.o.DurationUs {
			return
		}
		switch p := r.rng.Float64(); {
		case p < w.PutProb:
			puts++
			a := &ack{dc: dc, client: id, seq: puts, readLIds: append([]uint64(nil), seen...)}
			key := HyksosKey(r.rng.IntN(w.Keys))
			value := []byte(fmt.Sprintf("%d/%d", id, puts))
			r.hyk.puts[putID{id, puts}] = keyValue{key, value}
			r.appendRecord(c, cl, a, value, hyksos.PutTags(key, value), next)
		default:
			n := 1
			if p < w.PutProb+w.TxnProb {
				n = min(w.TxnKeys, w.Keys)
			}
			keys := make([]string, 0, n)
			for _, k := range r.rng.Perm(w.Keys)[:n] {
				keys = append(keys, HyksosKey(k))
			}
			r.open++
			before := st.Restarts()
			st.GetTxn(keys, func(rs []hyksos.Read, hl uint64, err error) {
				r.open--
				r.hyk.restarts += st.Restarts() - before
				if err != nil {
					r.fail(fmt.Errorf("client %d: GET_TXN %v: %w", id, keys, err))
					return
				}
				r.hyk.reads = append(r.hyk.reads, hyksos.Observed{DC: dc, Who: fmt.Sprintf("client %d", id), HL: hl, Keys: keys, Reads: rs})
				r.res.Reads++
				for _, rd := range rs {
					if rd.LId > 0 {
						seen = append(seen, rd.LId)
					}
				}
				c.After(r.rng.Int64N(r.o.ThinkUs+1), next)
			})
		}
	}
	c.After(r.rng.Int64N(r.o.ThinkUs+1), next)
}

// checkHyksos checks CH-I9 on the converged logs (hyksos.Check: every get and GET_TXN returned,
// for each key, the latest put at most its head of log in its datacenter's log, and its value;
// that every put causally before a returned put precedes it in every log is the append checks'
// (checkClients: each put after every put its client read before it; CH-I2 for the datacenters'
// knowledge)), and that collection kept every key's latest put in every log.
func checkHyksos(s chariots.Snapshot, h hyksosRun) error {
	putOf := func(rec *flstore.Record) (string, []byte, bool) {
		kv, ok := h.puts[putID{rec.Client, rec.AppendSeq}]
		return kv.key, kv.value, ok && !rec.NoOp
	}
	if err := hyksos.Check(s.Logs, h.reads, putOf); err != nil {
		return err
	}
	for dc, log := range s.Logs {
		latest := map[string]*flstore.Record{}
		for l := uint64(1); log[l] != nil; l++ {
			if k, _, ok := putOf(log[l]); ok {
				latest[k] = log[l]
			}
		}
		for l := uint64(1); log[l] != nil; l++ { // by position: the first offence is the one reported
			if k, _, ok := putOf(log[l]); ok && latest[k] == log[l] && log[l].Collected {
				return fmt.Errorf("hyksos collection: datacenter %d collected the latest put to %s (position %d)", dc, k, l)
			}
		}
	}
	return nil
}
