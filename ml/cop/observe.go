package cop

import (
	"fmt"
	"slices"
	"strconv"

	"github.com/meridian-kv/meridian/protocol/txn"
	"github.com/meridian-kv/meridian/verify/history"
)

// Observer sees the operations of a run as they happen; workers call it concurrently, each
// with its own worker number, and a worker's calls are in its program order.
type Observer interface {
	// Read reports that transaction id read the version of param written by transaction
	// version (0: the epoch's initial value).
	Read(worker int, id TxnID, param uint32, version TxnID)
	// Write reports that transaction id is installing param over version prev. For COP,
	// readers is the number of transactions counted as having read prev (equal to the planned
	// PReaders); the other schemes count nothing and report 0.
	Write(worker int, id TxnID, param uint32, prev TxnID, readers uint32)
	// Restart reports that OCC's validation failed and transaction id starts over: what Read
	// reported for it since it last started is void.
	Restart(worker int, id TxnID)
}

// Recorder is an Observer that records an epoch as a history for the serializability checker
// (verify/checker, spec C-I5): a transaction per planned transaction, parameters as keys ("p12"),
// versions named by their writer, and one replica whose version order follows, per parameter,
// which version each install overwrote. Each worker appends to its own log.
type Recorder struct {
	logs [][]event
}

// event is one recorded read or install.
type event struct {
	id, version TxnID // version: the version read, or the one overwritten
	param       uint32
	write       bool
}

// NewRecorder returns a recorder for a run with the given number of workers.
func NewRecorder(workers int) *Recorder { return &Recorder{logs: make([][]event, workers)} }

// Read records a read.
func (r *Recorder) Read(worker int, id TxnID, param uint32, version TxnID) {
	r.logs[worker] = append(r.logs[worker], event{id: id, version: version, param: param})
}

// Write records an install.
func (r *Recorder) Write(worker int, id TxnID, param uint32, prev TxnID, _ uint32) {
	r.logs[worker] = append(r.logs[worker], event{id: id, version: prev, param: param, write: true})
}

// Restart drops the reads of id's failed attempt (a worker runs one transaction at a time, so
// they are at the end of its log).
func (r *Recorder) Restart(worker int, id TxnID) {
	log := r.logs[worker]
	for len(log) > 0 && log[len(log)-1].id == id {
		log = log[:len(log)-1]
	}
	r.logs[worker] = log
}

// Reset forgets everything recorded, to record another epoch.
func (r *Recorder) Reset() {
	for w := range r.logs {
		r.logs[w] = r.logs[w][:0]
	}
}

// txnID names planned transaction id in a history; 0, the initial version, is txn.None.
func txnID(id TxnID) txn.ID {
	if id == 0 {
		return txn.None
	}
	return txn.NewID(1, uint32(id))
}

// key names parameter x in a history.
func key(x uint32) string { return "p" + strconv.FormatUint(uint64(x), 10) }

// History returns what was recorded as a history of committed transactions. It fails if the
// installs do not form one chain of versions per parameter (two installs overwrote the same
// version, or one overwrote a version never installed): then there is no version order at all.
func (r *Recorder) History() (*history.History, error) {
	byID := make(map[TxnID]*history.Txn)
	var ids []TxnID
	next := make(map[uint32]map[TxnID]TxnID) // param -> overwritten version -> writer
	for _, log := range r.logs {
		for _, ev := range log {
			t := byID[ev.id]
			if t == nil {
				t = &history.Txn{ID: txnID(ev.id), Status: txn.Committed, Client: "cop"}
				byID[ev.id] = t
				ids = append(ids, ev.id)
			}
			if !ev.write {
				t.Reads = append(t.Reads, txn.Read{Key: key(ev.param), Version: txnID(ev.version)})
				continue
			}
			t.Writes = append(t.Writes, key(ev.param))
			chain := next[ev.param]
			if chain == nil {
				chain = make(map[TxnID]TxnID)
				next[ev.param] = chain
			}
			if other, dup := chain[ev.version]; dup {
				return nil, fmt.Errorf("cop: T%d and T%d both overwrote version %d of parameter %d", other, ev.id, ev.version, ev.param)
			}
			chain[ev.version] = ev.id
		}
	}
	slices.Sort(ids)
	h := &history.History{Replicas: []history.Replica{{Name: "model", VersionOrder: make(map[string][]txn.ID)}}}
	for _, id := range ids {
		h.Txns = append(h.Txns, *byID[id])
	}
	for param, chain := range next {
		var order []txn.ID
		for v, ok := chain[0]; ok; v, ok = chain[v] {
			order = append(order, txnID(v))
		}
		if len(order) != len(chain) {
			return nil, fmt.Errorf("cop: %d of parameter %d's installs overwrote a version never installed", len(chain)-len(order), param)
		}
		h.Replicas[0].VersionOrder[key(param)] = order
	}
	return h, nil
}
