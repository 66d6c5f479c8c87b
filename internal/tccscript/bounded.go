package tccscript

import (
	"fmt"
	"slices"
	"testing"

	"github.com/meridian-kv/meridian/protocol"
	"github.com/meridian-kv/meridian/protocol/txn"
	"github.com/meridian-kv/meridian/protocols/tcc"
)

// CheckpointsStayBounded has one client write key "a" (partition 0 of two) again and again, one
// WOT a virtual second, and requires that the partition's checkpoint (protocol.Checkpointer) is
// no larger after 240 writes than after 40 (within 64 bytes: clocks grow, and perWriteBytes per
// write for what a protocol keeps per transaction, such as Eiger's decisions), while its version
// order (protocol.VersionOrderer) still lists every write in order: the order the checker needs
// must not be rewritten into every checkpoint. A protocol that installs into its store must also
// prune it (store.Store.Drop): compacted, it holds a few of the 240 versions, the latest among them.
func CheckpointsStayBounded(t *testing.T, factory protocol.Factory, newClient tcc.ClientFactory, params protocol.Params, perWriteBytes int) {
	t.Helper()
	w := New(t, factory, newClient, 2, params)
	c := w.Client()
	var wrote []txn.ID
	size := func() int {
		t.Helper()
		b, err := w.Replica(0).(protocol.Checkpointer).AppendCheckpoint(nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		return len(b)
	}
	write := func(n int) {
		t.Helper()
		for range n {
			h := c.Write(map[string]string{"a": fmt.Sprintf("value %04d", len(wrote))})
			w.DeliverAll()
			if !h.Done() || h.WriteResult().Status != txn.Committed {
				t.Fatalf("write %d: done %v, %+v", len(wrote), h.Done(), h.WriteResult())
			}
			wrote = append(wrote, h.ID())
			w.Advance(1_000_000)
			w.DeliverAll()
		}
	}
	write(40)
	early := size()
	write(200)
	if late := size(); late > early+64+200*perWriteBytes {
		t.Errorf("checkpoint of %d bytes after %d writes of one key, %d after 40: it grows with the writes", late, len(wrote), early)
	}
	if got := w.versionOrderOf("a"); !slices.Equal(got, wrote) {
		t.Errorf("version order of a: %d writers, want the %d writes in order", len(got), len(wrote))
	}
	// The store keeps the versions reads can still need (store.Store.Drop): with one write a
	// virtual second, those of the last tx_timeout plus the skew bound, not all 240.
	st := w.envs[w.layout.Node[0][tcc.PartitionOf("a", w.layout.Partitions())]].store
	st.Compact()
	if st.Versions() > maxLiveVersions {
		t.Errorf("the store holds %d versions of a after %d writes and a compaction, want at most %d", st.Versions(), len(wrote), maxLiveVersions)
	}
	if v, ok := st.ValueOf("a", wrote[len(wrote)-1]); st.Versions() > 0 && (!ok || string(v) != fmt.Sprintf("value %04d", len(wrote)-1)) {
		t.Errorf("the store lost the latest version of a: %q, %v", v, ok)
	}
}

// maxLiveVersions bounds the versions of one key written once a virtual second that a
// protocol's store may keep: the default 5-second transaction timeout plus the skew bound, with
// room.
const maxLiveVersions = 16
