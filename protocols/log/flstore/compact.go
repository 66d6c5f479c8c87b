package flstore

// Compaction by tag: the retention rule of Hyksos's garbage collection (package hyksos). With
// MaintainerConfig.GCKeepLatest a maintainer collects a record known to every datacenter only if
// each of its tags also names a later record it holds at a position up to its head of log: the
// record is superseded there, and any snapshot at or above its head of log reads the later one.
// Each maintainer decides over its own share of the log, so of the records carrying a tag every
// maintainer keeps at least its latest one (at most one per maintainer and tag stays behind its
// superseding record elsewhere). Records without tags are collected by the datacenter rule alone.

// collectSuperseded is collect under GCKeepLatest. A record kept as its tag's latest may be
// superseded by a later pass, so it cannot advance gcTo as the plain rule does: every pass reads
// the maintainer's records up to its head of log from its Disk (twice: the latest position of
// each tag, then the records to collect), which costs a scan of its share of the log per pass.
func (m *LogMaintainer) collectSuperseded() {
	latest := map[string]uint64{} // per tag name, the highest position holding it
	m.disk.records(0, m.hl, func(r *Record) bool {
		for _, t := range r.Tags {
			latest[t.Name] = max(latest[t.Name], r.LId)
		}
		return true
	})
	var drop []*Record
	m.disk.records(0, m.hl, func(r *Record) bool {
		if !r.Collected && !r.NoOp && r.Host < len(m.horizon) && r.TOId <= m.horizon[r.Host] && superseded(r, latest) {
			drop = append(drop, collected(r))
		}
		return true
	})
	for _, r := range drop {
		m.putRecord(r)
	}
}

// superseded reports whether every tag of record r names a later record (latest: per tag, the
// highest position of the maintainer's records holding it).
func superseded(r *Record, latest map[string]uint64) bool {
	for _, t := range r.Tags {
		if latest[t.Name] <= r.LId {
			return false
		}
	}
	return true
}
