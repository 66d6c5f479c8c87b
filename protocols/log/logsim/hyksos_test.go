package logsim

import (
	"strings"
	"testing"

	"github.com/meridian-kv/meridian/protocol"
	"github.com/meridian-kv/meridian/topology"
)

// TestHyksosWorkload runs Hyksos clients on three datacenters of table4.1: puts, gets and
// GET_TXNs on 20 keys, every read checked against the converged logs (CH-I9) and every put
// after the puts its client read before it in every log.
func TestHyksosWorkload(t *testing.T) {
	topo, _ := topology.Preset("table4.1")
	o := Options{Topology: topo, Seed: 1, Jitter: 1, ClientsPerDC: 3, DurationUs: 400_000, ThinkUs: 2000, RetryUs: 300_000,
		SettleUs: 5_000_000, CheckEveryUs: 5000, Params: protocol.Params{"maintainers": "2", "b": "20"},
		Hyksos: &HyksosWorkload{Keys: 20, PutProb: 0.5, TxnProb: 0.25, TxnKeys: 3}}
	res, err := Run(o)
	if err != nil {
		t.Fatalf("%v\n%s", err, o)
	}
	if res.Appends < 100 || res.Reads < 100 {
		t.Fatalf("%d puts and %d reads: too few to check anything", res.Appends, res.Reads)
	}
	t.Logf("%d puts, %d reads, logs %v", res.Appends, res.Reads, res.Records)
}

// TestHyksosCatchesStaleIndex is CH-I9's negative control: clients that take an indexer's
// answer before it is covered up to their head of log read an older put, and the check says so.
// Maintainers send index entries once the head of the log passes them, on their gossip timer:
// a 5 ms gossip period leaves the index that far behind the head of the log.
func TestHyksosCatchesStaleIndex(t *testing.T) {
	topo, _ := topology.Preset("table4.1")
	o := Options{Topology: topo, Seed: 1, Jitter: 1, ClientsPerDC: 3, DurationUs: 400_000, ThinkUs: 2000, RetryUs: 300_000,
		SettleUs: 5_000_000, Params: protocol.Params{"maintainers": "2", "b": "20", "gossip": "5ms"},
		Hyksos: &HyksosWorkload{Keys: 20, PutProb: 0.5, TxnProb: 0.25, TxnKeys: 3, UnsafeIgnoreCoverage: true}}
	if _, err := Run(o); err == nil || !strings.Contains(err.Error(), "CH-I9") {
		t.Fatalf("reads of a lagging index were not caught: %v", err)
	}
}

// TestHyksosGC runs Hyksos with its garbage collection (gc_keep_latest: maintainers drop the
// puts superseded below their head of log once every datacenter holds them) on few keys, so
// that most puts are superseded: CH-I9 still holds for every read (GET_TXNs that needed a
// collected put took a newer snapshot), no datacenter collected a key's latest put, and the
// collection did drop puts.
func TestHyksosGC(t *testing.T) {
	topo, _ := topology.Preset("table4.1")
	o := Options{Topology: topo, Seed: 1, Jitter: 1, ClientsPerDC: 3, DurationUs: 400_000, ThinkUs: 2000, RetryUs: 300_000,
		SettleUs: 5_000_000, CheckEveryUs: 20_000, Hyksos: &HyksosWorkload{Keys: 5, PutProb: 0.5, TxnProb: 0.25, TxnKeys: 3},
		Params: protocol.Params{"maintainers": "2", "b": "20", "gc_keep_latest": "true", "ship": "1ms"}}
	res, err := Run(o)
	if err != nil {
		t.Fatalf("%v\n%s", err, o)
	}
	collected, records := res.Snapshot.Collected()
	t.Logf("%d puts, %d reads (%d snapshots taken again), %d of %d records collected", res.Appends, res.Reads, res.HyksosRestarts, collected, records)
	if collected == 0 || res.Reads < 100 {
		t.Fatalf("%d records collected, %d reads: the collection was not exercised", collected, res.Reads)
	}
}

// TestHyksosCatchesPlainGC is the collection's negative control: the log's plain collection
// (gc: every record every datacenter holds) drops keys' current values, and the run says so.
func TestHyksosCatchesPlainGC(t *testing.T) {
	topo, _ := topology.Preset("table4.1")
	o := Options{Topology: topo, Seed: 1, Jitter: 1, ClientsPerDC: 3, DurationUs: 400_000, ThinkUs: 2000, RetryUs: 300_000,
		SettleUs: 5_000_000, Hyksos: &HyksosWorkload{Keys: 5, PutProb: 0.5, TxnProb: 0.25, TxnKeys: 3},
		Params: protocol.Params{"maintainers": "2", "b": "20", "gc": "true", "ship": "1ms"}}
	_, err := Run(o)
	if err == nil || !strings.Contains(err.Error(), "collected") {
		t.Fatalf("the plain collection of current values was not caught: %v", err)
	}
	t.Log(err)
}
