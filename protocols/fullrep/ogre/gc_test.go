package ogre

import (
	"fmt"
	"testing"

	"github.com/meridian-kv/meridian/protocol"
	"github.com/meridian-kv/meridian/protocol/store"
	"github.com/meridian-kv/meridian/protocol/txn"
	"github.com/meridian-kv/meridian/tools/bench"
	"github.com/meridian-kv/meridian/topology"
	"github.com/meridian-kv/meridian/workload"
)

// commitAt is a committed decision of transaction seq of client 1 writing value to keys, each
// overwriting version pred.
func commitAt(seq uint32, pred uint64, value string, keys ...string) *Decision {
	d := &Decision{Txn: &txn.Txn{ID: txn.NewID(1, seq)}, Commit: true}
	for _, k := range keys {
		d.Txn.Writes = append(d.Txn.Writes, txn.Write{Key: k, Value: []byte(value)})
		d.Pred, d.RBDeps = append(d.Pred, pred), append(d.RBDeps, nil)
	}
	return d
}

// TestRoTGCKeepsInFlightSnapshot: a read-only transaction read one key at a time (ro_chunk=1)
// stays in flight while newer transactions overwrite every key it reads and the garbage
// collector runs; it still reads its own snapshot (all keys as of its start), and once it is
// answered the collector frees every version but the newest of each key.
func TestRoTGCKeepsInFlightSnapshot(t *testing.T) {
	topo, _ := topology.Preset("aws-helios")
	nodes := make([]protocol.Node, topo.N())
	for i := range nodes {
		nodes[i] = protocol.Node{ID: protocol.NodeID(i), DC: i}
	}
	env := &countingEnv{store: store.New()}
	rep, err := New(true)(protocol.Config{Self: 0, Nodes: nodes, Topology: topo, Params: protocol.Params{ParamROChunk: "1"}}, env)
	if err != nil {
		t.Fatal(err)
	}
	r := rep.(*Replica)
	r.rot.ingest(commitAt(1, 0, "a1", "x", "y", "z"))
	r.HandleRequest(protocol.Request{Client: 9, Seq: 1, Kind: protocol.ReadSnapshot, Keys: []string{"x", "y", "z"}})
	if len(env.replies) != 0 || len(r.rot.reads) != 1 {
		t.Fatalf("a 3-key read with ro_chunk=1 answered at once: %+v", env.replies)
	}
	for i := uint32(2); i <= 5; i++ {
		r.rot.ingest(commitAt(i, uint64(i-1), fmt.Sprintf("a%d", i), "x", "y", "z"))
		r.HandleTimer(timerTick) // garbage collection while the read is in flight
	}
	// Pinned at timestamp 1: the versions of t1 and everything newer (3 keys × 5) are kept.
	if r.rot.retained != 15 {
		t.Fatalf("retained %d versions with a read pinned at the first; want 15", r.rot.retained)
	}
	r.HandleTimer(timerRead)
	r.HandleTimer(timerRead)
	if len(env.replies) != 1 {
		t.Fatalf("%d replies after the last chunk", len(env.replies))
	}
	for _, read := range env.replies[0].Snapshot {
		if string(read.Value) != "a1" || read.Version != txn.NewID(1, 1) {
			t.Errorf("in-flight read of %s after GC: %q by %v; want its snapshot's a1", read.Key, read.Value, read.Version)
		}
	}
	r.HandleTimer(timerTick)
	if r.rot.retained != 3 || len(r.rot.multi) != 0 {
		t.Fatalf("after the read: %d versions retained, %d keys with several; want 3 and 0", r.rot.retained, len(r.rot.multi))
	}
	r.HandleRequest(protocol.Request{Client: 9, Seq: 2, Kind: protocol.ReadSnapshot, Keys: []string{"y"}})
	if got := env.replies[1].Snapshot[0]; string(got.Value) != "a5" {
		t.Errorf("a new read after GC: %q; want the newest a5", got.Value)
	}
	// The checker's record of the version order keeps every writer, without values.
	if order := env.store.VersionOrder()["x"]; len(order) != 5 || env.store.Get("x").Value != nil {
		t.Errorf("store's order of x: %v (value %q); want 5 writers and no value", order, env.store.Get("x").Value)
	}
}

// retainedProbe wraps T-YCSB to sample, every second of a run, the RoT versions Ogre's replicas
// hold, the keys they hold them for, and the versions they applied in all.
type retainedProbe struct {
	workload.TYCSB
	samples *[]rotSample
}

type rotSample struct{ retained, keys, applied int }

type probeRun struct {
	workload.Run
	samples *[]rotSample
}

func (p retainedProbe) NewRun(info workload.RunInfo) (workload.Run, error) {
	run, err := p.TYCSB.NewRun(info)
	return probeRun{run, p.samples}, err
}

func (p probeRun) Tick(replicas []protocol.Replica, nowUs int64) {
	var s rotSample
	for _, rep := range replicas {
		if r, ok := rep.(*Replica); ok {
			s.retained += r.rot.retained
			s.keys += len(r.rot.chains)
			s.applied += r.rot.store.Versions()
		}
	}
	*p.samples = append(*p.samples, s)
	p.Run.Tick(replicas, nowUs)
}

// TestRoTGCBoundsMemory runs the main job on 1,000 keys with read-only clients for 60 virtual
// seconds and
// samples the RoT-Storages every second: the versions they apply grow with the run, the versions
// they retain stay within a small margin of one per key written (the newest), so RoT memory is
// bounded by the key space, not by the run's length. Read-only transactions of 500 keys are
// read in chunks of 100 over several inputs, so snapshots are pinned while the collector runs.
func TestRoTGCBoundsMemory(t *testing.T) {
	opts := bench.Defaults()
	opts.ClientsPerDC, opts.DurationUs = 6, 60_000_000
	opts.Params = protocol.Params{ParamROChunk: "100"}
	var samples []rotSample
	w := opts.Workload.(workload.TYCSB)
	w.Keys, w.ReadOnlyClientsPerDC, w.ReadOnlyKeys, w.ReadOnlyRate = 1000, 1, 500, 10
	opts.Workload = retainedProbe{w, &samples}
	res, err := bench.Run(opts, "ogre")
	if err != nil {
		t.Fatal(err)
	}
	if p := res.Problem(); p != nil {
		t.Fatal(p)
	}
	if len(samples) < 60 {
		t.Fatalf("%d samples", len(samples))
	}
	last, most := samples[len(samples)-1], 0
	for i, s := range samples {
		most = max(most, s.retained-s.keys)
		if extra := s.retained - s.keys; extra > 500 {
			t.Errorf("second %d: %d versions retained for %d keys (%d applied): %d beyond one per key", i, s.retained, s.keys, s.applied, extra)
		}
	}
	if last.applied < 5*last.retained {
		t.Fatalf("the run applied %d versions and retained %d: too short to show anything", last.applied, last.retained)
	}
	t.Logf("at the end: %d versions applied, %d retained for %d keys; at most %d beyond one per key", last.applied, last.retained, last.keys, most)
}
