package logsim

import (
	"bytes"
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

// hyksosRead is one get or GET_TXN as its client saw it: as of head of log HL in datacenter
// dc, each key's value and position.
type hyksosRead struct {
	dc     int
	client txn.ClientID
	hl     uint64
	keys   []string
	reads  []hyksos.Read
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
			r.appendRecord(c, cl, a, value, []flstore.Tag{{Name: hyksos.Tag(key), Value: value}}, next)
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
			st.GetTxn(keys, func(rs []hyksos.Read, hl uint64, err error) {
				r.open--
				if err != nil {
					r.fail(fmt.Errorf("client %d: GET_TXN %v: %w", id, keys, err))
					return
				}
				r.hreads = append(r.hreads, hyksosRead{dc: dc, client: id, hl: hl, keys: keys, reads: rs})
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

// checkHyksos checks CH-I9 on the converged logs: every get and GET_TXN returned, for each
// key, the put with the highest position at most its head of log in its datacenter's log (and
// its value); that every put causally before a returned put precedes it in every log is the
// append checks' (checkClients: each put after every put its client read before it; CH-I2 for
// the datacenters' knowledge).
func checkHyksos(s chariots.Snapshot, reads []hyksosRead) error {
	latest := make([]map[string][]uint64, len(s.Logs)) // per datacenter, key → positions of its puts, increasing
	for dc, log := range s.Logs {
		latest[dc] = map[string][]uint64{}
		for l := uint64(1); log[l] != nil; l++ {
			for _, t := range log[l].Tags {
				latest[dc][t.Name] = append(latest[dc][t.Name], l)
			}
		}
	}
	for _, rd := range reads {
		for i, k := range rd.keys {
			want := uint64(0)
			for _, l := range latest[rd.dc][hyksos.Tag(k)] {
				if l <= rd.hl {
					want = l
				}
			}
			got := rd.reads[i]
			if got.LId != want {
				return fmt.Errorf("CH-I9: client %d at datacenter %d read %s as of %d at position %d, the latest put is at %d",
					rd.client, rd.dc, k, rd.hl, got.LId, want)
			}
			if want > 0 && !bytes.Equal(got.Value, s.Logs[rd.dc][want].Body) {
				return fmt.Errorf("CH-I9: client %d at datacenter %d read %s = %q, position %d holds %q", rd.client, rd.dc, k, got.Value, want,
					s.Logs[rd.dc][want].Body)
			}
		}
	}
	return nil
}
