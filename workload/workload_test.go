package workload

import (
	"testing"

	"github.com/meridian-kv/meridian/protocol/txn"
	"github.com/meridian-kv/meridian/protocols/registry"
)

// TestLookupAndFamilies: every workload is found by its name, the first of each family in the
// list is its default (T-YCSB for read-write protocols, TCC for causal ones, micro for the
// partitioned read-write family; TPC-C, Bank and social are chosen by name), and an unknown
// name is refused with the known ones listed.
func TestLookupAndFamilies(t *testing.T) {
	first := map[registry.Family]string{}
	for _, name := range Names() {
		w, err := Lookup(name)
		if err != nil || w.Name() != name {
			t.Fatalf("Lookup(%q) = %v, %v", name, w, err)
		}
		if err := w.Validate(); err != nil {
			t.Errorf("%s: default settings invalid: %v", name, err)
		}
		if _, ok := first[w.Family()]; !ok {
			first[w.Family()] = name
		}
		byFamily, err := ForFamily(w.Family())
		if err != nil || byFamily.Name() != first[w.Family()] {
			t.Errorf("ForFamily(%s) = %v, %v; want %s", w.Family(), byFamily, err, first[w.Family()])
		}
	}
	if first[registry.ReadWrite] != "tycsb" || first[registry.Causal] != "tcc" || first[registry.PartitionedReadWrite] != "micro" {
		t.Errorf("family defaults %v", first)
	}
	if _, err := Lookup("ycsb"); err == nil {
		t.Error("Lookup of an unknown workload succeeded")
	}
	if _, err := ForFamily(registry.Family("log")); err == nil {
		t.Error("ForFamily of a family no workload runs succeeded")
	}
}

// TestClientStreamsDiffer: clients of one run draw from distinct streams, and the workloads with
// client libraries (tcc, micro, social) keep the library's stream (2·id) apart from their
// clients' (2·id+1).
func TestClientStreamsDiffer(t *testing.T) {
	for _, w := range []Workload{DefaultTYCSB(), DefaultTCC(), DefaultMicro(), DefaultSocial(), DefaultTPCC(), DefaultBank()} {
		seen := map[uint64]bool{}
		for id := range 1000 {
			s := w.ClientStream(txn.ClientID(id + 1))
			if seen[s] || (w.Family() != registry.ReadWrite && s%2 == 0) {
				t.Fatalf("%s: stream %d of client %d collides", w.Name(), s, id+1)
			}
			seen[s] = true
		}
	}
}
