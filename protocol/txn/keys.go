package txn

// KeyTable numbers keys, in the order they are first numbered, so that per-key state can live in
// flat slices indexed by a small integer instead of in maps keyed by string: a replica's store
// (package store) and its pools of pending transactions (PoolIndex). A number never changes.
// Replicas that hold the same keys, such as the simulator's replicas of one partition, may share
// one table: a key is then looked up once for all of them (Txn.KeyNumbers). A table and
// everything numbered in it must be used from one goroutine.
type KeyTable struct {
	names Strings
}

// NewKeyTable returns an empty key table.
func NewKeyTable() *KeyTable { return &KeyTable{} }

// Number returns key's number, numbering the key if it is new.
func (kt *KeyTable) Number(key string) int32 { return int32(kt.names.Intern(key)) }

// Find returns key's number, if the key has one.
func (kt *KeyTable) Find(key string) (int32, bool) {
	k, ok := kt.names.Lookup(key)
	return int32(k), ok
}

// FindBytes is Find for a key held as bytes (a decoded name), without copying it.
func (kt *KeyTable) FindBytes(key []byte) (int32, bool) {
	k, ok := kt.names.LookupBytes(key)
	return int32(k), ok
}

// Name returns the key numbered k.
func (kt *KeyTable) Name(k int32) string { return kt.names.At(uint32(k)) }

// Len returns how many keys are numbered: every number is below it.
func (kt *KeyTable) Len() int { return kt.names.Len() }

// KeyNumbers returns the numbers in kt of t's keys: reads[i] is the number of Reads[i].Key and
// writes[j] that of Writes[j].Key. The numbers are computed on the first call for kt and kept in
// t (a Txn is immutable once submitted), so that the replicas sharing kt, and every pool and
// store of one replica, look each key up once. The slices are owned by t. Like kt, t must then
// be used from one goroutine; a call with another table replaces the numbers kept.
func (t *Txn) KeyNumbers(kt *KeyTable) (reads, writes []int32) {
	if t.keysIn != kt {
		nums := make([]int32, 0, len(t.Reads)+len(t.Writes))
		for _, r := range t.Reads {
			nums = append(nums, kt.Number(r.Key))
		}
		for _, w := range t.Writes {
			nums = append(nums, kt.Number(w.Key))
		}
		t.keysIn, t.keys = kt, nums
	}
	return t.keys[:len(t.Reads):len(t.Reads)], t.keys[len(t.Reads):]
}

// ForgetKeyNumbers drops the numbers KeyNumbers kept in t (the next call computes them again),
// so that t is reflect.DeepEqual to a copy of it decoded from the wire: codec tests that compare
// what replicas sent with what arrived call it.
func (t *Txn) ForgetKeyNumbers() { t.keysIn, t.keys = nil, nil }
