package fastccs

// VC is a FastCCS vector clock (spec §2.2): one sequence number per slot. In the thesis's
// single-datacenter protocol a slot is a partition; the vector is indexed through Slots so that
// the geo-replicated extension (spec G1) can index it by (datacenter, partition) without changing
// the rules. The zero-length VC is the all-zero vector of any length (the initial version's ct).
//
// A VC that has been sent in a message or installed on a version is never modified again: it is
// shared by reference.
type VC []int64

// at returns entry k, 0 beyond the end (so that the nil VC is the zero vector).
func (a VC) at(k int) int64 {
	if k < len(a) {
		return a[k]
	}
	return 0
}

// LessEq reports a ≤ b: every entry of a is at most the same entry of b.
func (a VC) LessEq(b VC) bool {
	for k, x := range a {
		if x > b.at(k) {
			return false
		}
	}
	return true
}

// Covers reports a ≥ b. "a does not cover b" (∃k: a[k] < b[k]) is !a.Covers(b): it is what the
// thesis writes as the vector comparison a < b in Algorithm 1 line 10, and it must never be
// implemented as a strict component-wise <, which is false for incomparable vectors (spec A7).
func (a VC) Covers(b VC) bool { return b.LessEq(a) }

// Equal reports whether a and b are the same vector (trailing zeros do not matter).
func (a VC) Equal(b VC) bool { return a.LessEq(b) && b.LessEq(a) }

// Clone returns a copy of a that the caller may modify.
func (a VC) Clone() VC { return append(VC(nil), a...) }

// MergeFrom sets a to max(a, b) entry by entry (the vector max of the thesis), ignoring entries of b beyond len(a). Callers
// merge only vectors whose length they validated.
func (a VC) MergeFrom(b VC) {
	for k := range a {
		if x := b.at(k); x > a[k] {
			a[k] = x
		}
	}
}

// Slots maps (datacenter, partition) to a vector slot: slot = partition×DCs + dc. With one
// datacenter the slot is the partition, as in the thesis. The entries of one partition in every
// datacenter are contiguous, so that the geo extension can gossip a partition's column as one
// range.
type Slots struct {
	DCs, Partitions int
}

// Len is the length of every vector: DCs × Partitions.
func (s Slots) Len() int { return s.DCs * s.Partitions }

// Of returns the slot of partition p in datacenter dc.
func (s Slots) Of(dc, p int) int { return p*s.DCs + dc }
