package cluster

import (
	"slices"
	"testing"
)

// TestAdded: no file lists no spare; RecordAdded appends each name once, in order.
func TestAdded(t *testing.T) {
	dir := t.TempDir()
	if got, err := Added(dir); err != nil || got != nil {
		t.Fatalf("no file: %v, %v", got, err)
	}
	for _, n := range []string{"east-spare-queue1", "west-spare-batcher1", "east-spare-queue1"} {
		if err := RecordAdded(dir, n); err != nil {
			t.Fatal(err)
		}
	}
	if got, err := Added(dir); err != nil || !slices.Equal(got, []string{"east-spare-queue1", "west-spare-batcher1"}) {
		t.Fatalf("added: %v, %v", got, err)
	}
}
