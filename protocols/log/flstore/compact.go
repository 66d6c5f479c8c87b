package flstore

// Compaction by tag: the retention rule of Hyksos's garbage collection (package hyksos). With
// MaintainerConfig.GCKeepLatest a maintainer collects a record known to every datacenter only if
// each of its tags also names a later record it holds at a position up to its head of log: the
// record is superseded there, and any snapshot at or above its head of log reads the later one.
// Each maintainer decides over its own share of the log, so of the records carrying a tag every
// maintainer keeps at least its latest one (at most one per maintainer and tag stays behind its
// superseding record elsewhere). Records without tags are collected by the datacenter rule alone.

// latestByTag returns, per tag name, the highest position among the records of filled at most
// hl (collected records have lost their tags and count for none).
func latestByTag(filled map[uint64]*Record, hl uint64) map[string]uint64 {
	latest := map[string]uint64{}
	for l, r := range filled {
		if l > hl {
			continue
		}
		for _, t := range r.Tags {
			latest[t.Name] = max(latest[t.Name], l)
		}
	}
	return latest
}

// superseded reports whether every tag of record r, at position l, names a later record
// (latest: latestByTag of the maintainer's records).
func superseded(r *Record, l uint64, latest map[string]uint64) bool {
	for _, t := range r.Tags {
		if latest[t.Name] <= l {
			return false
		}
	}
	return true
}
