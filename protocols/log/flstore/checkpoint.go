package flstore

import (
	"maps"
	"slices"

	"github.com/meridian-kv/meridian/protocol"
	"github.com/meridian-kv/meridian/protocol/txn"
	"github.com/meridian-kv/meridian/protocol/wire"
)

// Checkpoints (protocol.Checkpointer) of the two FLStore stages. A maintainer's records are on
// its Disk (protocol.Disk), which the driver keeps durable itself, so its checkpoint holds its
// metadata only and does not grow with the log.

// AppendCheckpoint implements protocol.Checkpointer: the journal, the records persisted, the
// progress (next, contig), the positions filled above next, the head of log, the peers'
// progress (by node), the explicit-order appends waiting, the index entries not yet
// acknowledged (by indexer), the no-op fill's lag start, the garbage-collection horizon, how far
// each host's records were collected, the last collection's time, and the token generation and
// whether it is frozen (Chariots), why it stopped if it lost its records, and the answers owed
// to the appends persisted above the head of the log (Chariots).
func (m *LogMaintainer) AppendCheckpoint(dst []byte, _ protocol.Codec) ([]byte, error) {
	w := wire.NewWriter(dst)
	WriteJournal(w, m.cfg.Journal)
	w.Uvarint(m.count)
	w.Uvarint(m.next)
	w.Uvarint(m.contig)
	above := slices.Sorted(maps.Keys(m.above))
	w.Count("positions above next", len(above), wire.MaxCheckpointCount)
	for _, l := range above {
		w.Uvarint(l)
	}
	w.Uvarint(m.hl)
	peers := slices.Sorted(maps.Keys(m.peers))
	w.Count("peers", len(peers), MaxNodes)
	for _, p := range peers {
		pr := m.peers[p]
		WriteNode(w, p)
		w.Uvarint(pr.next)
		w.Uvarint(pr.contig)
		w.Int("epochs", pr.epochs, MaxEpochs)
	}
	w.Count("waiting appends", len(m.waiting), wire.MaxCheckpointCount)
	for _, r := range m.waiting {
		WriteRecord(w, r)
	}
	ixs := slices.Sorted(maps.Keys(m.unindexed))
	w.Count("indexers", len(ixs), MaxNodes)
	for _, ix := range ixs {
		WriteNode(w, ix)
		w.Count("unindexed entries", len(m.unindexed[ix]), wire.MaxCheckpointCount)
		for _, e := range m.unindexed[ix] {
			writeEntry(w, e)
		}
	}
	writeClaims(w, m.claimed)
	w.Varint(m.lagSinceUs)
	WriteVec(w, "horizon", m.horizon, MaxDCs)
	WriteVec(w, "collected", m.gcTo, MaxDCs)
	w.Varint(m.lastGCUs)
	w.Uvarint(m.gen)
	w.Bool(m.frozen)
	w.String("lost", m.lost, maxLostLen)
	w.Count("unanswered appends", len(m.unanswered), wire.MaxCheckpointCount)
	for _, a := range m.unanswered {
		w.Uvarint(a.LId)
		w.Uvarint(uint64(a.Client))
		w.Uvarint(a.CallSeq)
		w.Uvarint(a.TOId)
		WriteNode(w, a.Via)
	}
	return w.Finish()
}

// RestoreCheckpoint implements protocol.Checkpointer.
func (m *LogMaintainer) RestoreCheckpoint(b []byte, _ protocol.Codec) error {
	r := wire.NewReader(b)
	m.cfg.Journal = ReadJournal(r)
	if r.Err() == nil && (!m.cfg.Journal.Valid() || !m.cfg.Journal.Within(m.cfg.Peers)) {
		r.Fail("journal", "invalid, or names a node that is not a maintainer of the datacenter")
	}
	m.count, m.next, m.contig = r.Uvarint("records"), r.Uvarint("next"), r.Uvarint("contig")
	m.above = map[uint64]bool{}
	for range r.Count("positions above next", wire.MaxCheckpointCount, 1) {
		m.above[r.Uvarint("position above next")] = true
	}
	m.hl = r.Uvarint("head of log")
	m.peers = map[protocol.NodeID]progress{}
	for range r.Count("peers", MaxNodes, 4) {
		p := ReadNode(r)
		m.peers[p] = progress{next: r.Uvarint("peer next"), contig: r.Uvarint("peer contig"), epochs: r.Int("epochs", MaxEpochs)}
	}
	m.waiting = nil
	for range r.Count("waiting appends", wire.MaxCheckpointCount, 13) {
		m.waiting = append(m.waiting, ReadRecord(r))
	}
	m.unindexed = map[protocol.NodeID][]IndexEntry{}
	for range r.Count("indexers", MaxNodes, 2) {
		ix := ReadNode(r)
		var es []IndexEntry
		for range r.Count("unindexed entries", wire.MaxCheckpointCount, 3) {
			es = append(es, readEntry(r))
		}
		m.unindexed[ix] = es
	}
	m.claimed = readClaims(r)
	m.lagSinceUs = r.Varint("lag start")
	m.horizon = ReadVec(r, "horizon", MaxDCs)
	m.gcTo = ReadVec(r, "collected", MaxDCs)
	if r.Err() == nil && m.cfg.Chariots && len(m.gcTo) != m.cfg.DCs {
		r.Fail("collected", "%d hosts, want %d", len(m.gcTo), m.cfg.DCs)
	}
	m.lastGCUs = r.Varint("last collection")
	m.gen, m.frozen = r.Uvarint("generation"), r.Bool("frozen")
	m.lost = r.String("lost", maxLostLen)
	m.unanswered = nil
	for range r.Count("unanswered appends", wire.MaxCheckpointCount, 5) {
		a := answer{LId: r.Uvarint("position"), Client: txn.ClientID(r.Uvarint("client")), CallSeq: r.Uvarint("call"), TOId: r.Uvarint("toid"), Via: ReadNode(r)}
		if r.Err() == nil && len(m.unanswered) > 0 && a.LId <= m.unanswered[len(m.unanswered)-1].LId {
			r.Fail("unanswered appends", "positions out of order")
		}
		m.unanswered = append(m.unanswered, a)
	}
	return r.Done()
}

// maxLostLen bounds the reason a maintainer stopped (LogMaintainer.lose).
const maxLostLen = 1 << 12

// AppendCheckpoint implements protocol.Checkpointer: the count of entries received and the
// maintainers' index claims; the posting lists are on the indexer's Disk (diskPostings).
func (x *LogIndexer) AppendCheckpoint(dst []byte, _ protocol.Codec) ([]byte, error) {
	w := wire.NewWriter(dst)
	w.Uvarint(x.n)
	writeClaims(w, x.claims)
	return w.Finish()
}

// RestoreCheckpoint implements protocol.Checkpointer.
func (x *LogIndexer) RestoreCheckpoint(b []byte, _ protocol.Codec) error {
	r := wire.NewReader(b)
	x.n = r.Uvarint("entries received")
	x.claims = readClaims(r)
	return r.Done()
}

// writeClaims writes index claims by maintainer (a maintainer's acknowledged ones, an indexer's
// received ones): the position claimed through and the journal's epochs then.
func writeClaims(w *wire.Writer, claims map[protocol.NodeID]indexClaim) {
	for _, n := range wire.SortedKeys(w, "index claims", claims) {
		WriteNode(w, n)
		w.Uvarint(claims[n].through)
		w.Int("claim epochs", claims[n].epochs, MaxEpochs)
	}
}

func readClaims(r *wire.Reader) map[protocol.NodeID]indexClaim {
	claims := map[protocol.NodeID]indexClaim{}
	for range r.Count("index claims", wire.MaxCheckpointCount, 3) {
		n := ReadNode(r)
		claims[n] = indexClaim{through: r.Uvarint("claimed through"), epochs: r.Int("claim epochs", MaxEpochs)}
	}
	return claims
}

var (
	_ protocol.Checkpointer = (*LogMaintainer)(nil)
	_ protocol.Checkpointer = (*LogIndexer)(nil)
	_ protocol.Failer       = (*LogMaintainer)(nil)
)
