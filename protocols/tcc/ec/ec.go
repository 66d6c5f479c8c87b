// Package ec is the eventual-consistency baseline of the transactional-causal comparison (spec
// fastccs-tcc.md §3.1, [RESOLUTION EC1]): the plain Cassandra the thesis measured FastCCS, Eiger
// and Wren against, as their performance upper bound and the checker's negative control.
//
// One replica per partition (replication factor 1, one datacenter), one version per key, and
// last-writer-wins on a client-supplied timestamp: the client's clock, made strictly increasing
// per session, with the writer's id (whose high half is the client id) breaking ties. A ROT
// is one parallel round reading each partition's current values; a WOT is one parallel round
// writing each partition's share, which applies at once. There is no coordinator, no check and
// no atomicity, so a ROT that runs between the arrivals of one WOT at two partitions returns a
// fractured read (spec §5.3 "EC X1"), which the TCC checker must flag (C2). A client resends
// its request to every partition that has not answered within tx_timeout (a WOT with the same
// timestamp, so that a resent write is a no-op).
//
// Version order, for the checker: a key's versions are every write its partition received,
// ordered by timestamp, including writes LWW discarded because a newer one had arrived first.
// LWW behaves as if each write were installed at its timestamp's place and immediately
// overwritten by the newer ones: the final value is the maximum, and every value a ROT can
// return belongs to this order. Leaving discarded writes out would make the checker report a
// committed WOT missing from its keys (a bogus failure, EC's WOTs do all "commit"); with them
// in, the checker judges what EC really does, and flags it for fractured reads and causality
// violations (C2). The replica implements protocol.VersionOrderer, since arrival order is not
// timestamp order, and keeps that order on its Disk (tcc.VersionLog), outside its checkpoints:
// they hold the current values only, so they are bounded by the key space.
package ec

import (
	"errors"
	"fmt"

	"github.com/meridian-kv/meridian/protocol"
	"github.com/meridian-kv/meridian/protocol/txn"
	"github.com/meridian-kv/meridian/protocols/registry"
	"github.com/meridian-kv/meridian/protocols/tcc"
)

func init() {
	registry.Register("ec", registry.Entry{
		Family:          registry.Causal,
		Description:     "eventual consistency: one round per ROT and WOT, last-writer-wins on client timestamps, no atomicity (the negative control)",
		New:             New,
		Codec:           Codec,
		NewClient:       NewClient,
		MaxReadRounds:   1,
		Consistency:     registry.Eventual,
		VisibleOnCommit: true,
	})
}

// ParamTxTimeout is how long a client waits for an answer before resending (default 5s). It is
// the only parameter; replicas accept it too, so one parameter set serves both halves.
const ParamTxTimeout = "tx_timeout"

func parseTimeout(p protocol.Params) (int64, error) {
	if err := p.CheckKnown([]string{ParamTxTimeout}, nil); err != nil {
		return 0, fmt.Errorf("ec: %w", err)
	}
	us, err := p.Duration(ParamTxTimeout, 5_000_000)
	if err == nil && us <= 0 {
		err = fmt.Errorf("parameter %s must be positive", ParamTxTimeout)
	}
	if err != nil {
		return 0, fmt.Errorf("ec: %w", err)
	}
	return us, nil
}

// cell is a key's current value.
type cell struct {
	value []byte
	stamp tcc.Stamp
}

// Replica is one EC partition.
type Replica struct {
	env   protocol.Env
	part  int
	nodes int
	data  map[string]cell
	order *tcc.VersionLog // every write received, by stamp: the LWW version order
}

// New builds the EC partition cfg.Self.
func New(cfg protocol.Config, env protocol.Env) (protocol.Replica, error) {
	if _, err := parseTimeout(cfg.Params); err != nil {
		return nil, err
	}
	if cfg.Topology == nil {
		return nil, errors.New("ec: no topology")
	}
	nodes, err := tcc.SingleDC("ec", "replication factor 1", cfg.Nodes, cfg.Topology.N())
	if err != nil {
		return nil, err
	}
	if int(cfg.Self) < 0 || int(cfg.Self) >= len(cfg.Nodes) {
		return nil, fmt.Errorf("ec: self node %d out of range", cfg.Self)
	}
	return &Replica{env: env, part: cfg.Nodes[cfg.Self].Partition, nodes: len(nodes),
		data: map[string]cell{}, order: tcc.NewVersionLog(env)}, nil
}

// Start does nothing: EC has no background protocol.
func (r *Replica) Start() {}

// HandleMessage ignores everything: EC partitions never talk to each other.
func (r *Replica) HandleMessage(protocol.NodeID, protocol.Message) {}

// HandleTimer ignores everything: EC sets no timers.
func (r *Replica) HandleTimer(protocol.TimerID) {}

// HandleRequest serves reads (current values) and writes (last writer wins).
func (r *Replica) HandleRequest(req protocol.Request) {
	reply := protocol.Reply{Client: req.Client, Seq: req.Seq}
	reply.Op, reply.Err = r.serve(req)
	r.env.Reply(reply)
}

func (r *Replica) serve(req protocol.Request) (protocol.Message, string) {
	if req.Kind != protocol.Operation {
		return nil, "ec: only protocol operations are served"
	}
	switch op := req.Op.(type) {
	case *ReadReq:
		if err := r.foreign(op.Keys); err != "" {
			return nil, err
		}
		resp := &ReadResp{Tx: op.Tx, Items: make([]Item, len(op.Keys))}
		for i, k := range op.Keys {
			c := r.data[k]
			resp.Items[i] = Item{Key: k, Value: c.value, Writer: c.stamp.Writer}
		}
		return resp, ""
	case *WriteReq:
		keys := make([]string, len(op.Writes))
		for i, w := range op.Writes {
			keys[i] = w.Key
		}
		if err := r.foreign(keys); err != "" {
			return nil, err
		}
		for _, w := range op.Writes {
			r.write(w, tcc.Stamp{Time: op.Ts, Writer: op.Tx})
		}
		return &WriteResp{Tx: op.Tx}, ""
	}
	return nil, fmt.Sprintf("ec: unexpected request %T", req.Op)
}

// foreign names the first key that is not on this partition.
func (r *Replica) foreign(keys []string) string {
	for _, k := range keys {
		if tcc.PartitionOf(k, r.nodes) != r.part {
			return fmt.Sprintf("ec: key %q is not on partition %d", k, r.part)
		}
	}
	return ""
}

// write applies w if its stamp is newer than the key's current one, and places it in the key's
// order either way (a resent write, with the same stamp, changes nothing).
func (r *Replica) write(w txn.Write, s tcc.Stamp) {
	r.order.Add(w.Key, s.Writer, s.Time)
	if c, ok := r.data[w.Key]; !ok || c.stamp.Compare(s) < 0 {
		r.data[w.Key] = cell{value: w.Value, stamp: s}
	}
}

// VersionOrder implements protocol.VersionOrderer: each key's writes by timestamp.
func (r *Replica) VersionOrder() map[string][]txn.ID { return r.order.Order() }
