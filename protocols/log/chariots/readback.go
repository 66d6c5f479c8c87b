package chariots

import (
	"fmt"

	"github.com/meridian-kv/meridian/protocol"
	"github.com/meridian-kv/meridian/protocols/log/flstore"
)

// SnapshotOfLogs builds a Snapshot from logs read back through clients, for a deployment the
// checker cannot look inside (real processes): logs[dc] are datacenter dc's records at
// positions 1..heads[dc].HL, read with the head of log and journal heads[dc]. Every maintainer
// is credited with that head and journal, every position with its owner under the journal, and
// each datacenter's own row with the highest TOId of each host it logged; there are no ATables.
// So Checker.Check and CheckConverged check what the read-back logs can show: CH-I1 (TOIds in
// order, 1..k per host), CH-I2 (dependencies earlier), CH-I3 (each record and each client
// append once per log) and convergence (every datacenter holds the same records); CH-I4 to
// CH-I7 hold by construction.
func SnapshotOfLogs(l *flstore.Layout, logs [][]*Record, heads []flstore.HLResult) (Snapshot, error) {
	dcs := len(logs)
	s := Snapshot{Layout: l, DCs: dcs, HL: map[protocol.NodeID]uint64{}, Journals: map[protocol.NodeID]flstore.Journal{},
		Tables: map[protocol.NodeID][][]uint64{}}
	for dc := range dcs {
		h := heads[dc]
		if !h.Journal.Valid() {
			return Snapshot{}, fmt.Errorf("datacenter %d: an invalid journal", dc)
		}
		s.Logs = append(s.Logs, map[uint64]*Record{})
		s.At = append(s.At, map[uint64]protocol.NodeID{})
		s.Truth = append(s.Truth, make([]uint64, dcs))
		s.LastLId = append(s.LastLId, h.HL)
		s.Journal = append(s.Journal, h.Journal)
		for _, r := range logs[dc] {
			if _, dup := s.Logs[dc][r.LId]; dup {
				return Snapshot{}, fmt.Errorf("datacenter %d: position %d read twice", dc, r.LId)
			}
			s.Logs[dc][r.LId], s.At[dc][r.LId] = r, h.Journal.Owner(max(r.LId, 1))
			if r.Host >= 0 && r.Host < dcs {
				s.Truth[dc][r.Host] = max(s.Truth[dc][r.Host], r.TOId)
			}
		}
		for _, m := range l.All(dc, flstore.Maintainer) {
			s.HL[m], s.Journals[m] = h.HL, h.Journal
		}
	}
	return s, nil
}
