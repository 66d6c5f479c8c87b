package txn

import (
	"hash/maphash"
	"unsafe"
)

// Strings numbers distinct strings 0, 1, 2, … in order of first appearance, compactly and
// without a pointer per string: their bytes lie one after the other in one arena, and the
// look-up table is an open-addressing array of 16-byte slots, each holding a string's number and,
// for a string of up to slotInline bytes (every key of the workloads), the whole string. Finding
// such a string then reads one slot, one cache miss in a table of many keys, where a Go map reads
// a control word and a slot and a table holding only numbers also reads the arena. A long run's
// history names hundreds of thousands of keys: a []string with a map[string]uint32 costs about 38
// bytes a key and gives the garbage collector two pointers a key to follow at every collection;
// Strings costs 36 to 58 ("k123456": 7 bytes, an 8-byte end offset, 16-byte slots between 3/8
// and 3/4 full) and nothing to follow. The zero Strings is empty and ready to use; it is not safe for
// concurrent use.
type Strings struct {
	// data holds the strings' bytes. Bytes once written are never written again (append only
	// writes past the length), so the strings At hands out, which point into data, stay valid
	// and unchanged even after data moves to a larger array.
	data  []byte
	end   []int        // string i is data[end[i-1]:end[i]], with end[-1] taken as 0
	slots []stringSlot // a power of two, at most 3/4 full
	seed  maphash.Seed
}

// slotInline is the length up to which a string is held whole in its slot.
const slotInline = 11

// stringSlot is one slot of a Strings table: empty (numPlus 0) or string numPlus-1, whose
// length is size, or, when size is slotLong, longer than slotInline (compared in the arena);
// inline holds the string's bytes when it is short.
type stringSlot struct {
	inline  [slotInline]byte
	size    uint8
	numPlus uint32
}

// slotLong is stringSlot.size of a string longer than slotInline.
const slotLong = 255

// Len returns the number of distinct strings numbered.
func (s *Strings) Len() int { return len(s.end) }

// At returns string number i (0 <= i < Len()). It does not copy: the string shares the arena.
func (s *Strings) At(i uint32) string {
	start := 0
	if i > 0 {
		start = s.end[i-1]
	}
	n := s.end[i] - start
	if n == 0 {
		return ""
	}
	return unsafe.String(&s.data[start], n)
}

// Intern returns str's number, numbering it if it is new.
func (s *Strings) Intern(str string) uint32 {
	slot, found := s.find(str)
	if found {
		return s.slots[slot].numPlus - 1
	}
	n := uint32(len(s.end))
	s.data = append(s.data, str...)
	s.end = append(s.end, len(s.data))
	if 4*len(s.end) > 3*len(s.slots) {
		s.grow()
	} else {
		s.slots[slot] = s.slotFor(str, n)
	}
	return n
}

// Lookup returns str's number, if it has one.
func (s *Strings) Lookup(str string) (uint32, bool) {
	slot, found := s.find(str)
	if !found {
		return 0, false
	}
	return s.slots[slot].numPlus - 1, true
}

// LookupBytes is Lookup for a string held as bytes (a decoded name), without copying it.
func (s *Strings) LookupBytes(b []byte) (uint32, bool) {
	if len(b) == 0 {
		return s.Lookup("")
	}
	return s.Lookup(unsafe.String(&b[0], len(b))) // Lookup keeps no reference to its argument
}

// find returns the slot that holds str's number (found) or the empty slot where it belongs
// (then slot is -1 if the table has no slot at all).
func (s *Strings) find(str string) (slot int, found bool) {
	if len(s.slots) == 0 {
		return -1, false
	}
	mask := len(s.slots) - 1
	for i := int(maphash.String(s.seed, str)) & mask; ; i = (i + 1) & mask {
		e := &s.slots[i]
		switch {
		case e.numPlus == 0:
			return i, false
		case len(str) <= slotInline:
			if int(e.size) == len(str) && string(e.inline[:len(str)]) == str {
				return i, true
			}
		case e.size == slotLong && s.At(e.numPlus-1) == str:
			return i, true
		}
	}
}

// slotFor returns the slot of str, numbered n.
func (s *Strings) slotFor(str string, n uint32) stringSlot {
	e := stringSlot{size: slotLong, numPlus: n + 1}
	if len(str) <= slotInline {
		e.size = uint8(copy(e.inline[:], str))
	}
	return e
}

// grow doubles the table (or makes the first one) and slots every string in again.
func (s *Strings) grow() {
	if len(s.slots) == 0 {
		s.seed = maphash.MakeSeed() // the numbering never depends on the hash
	}
	s.slots = make([]stringSlot, max(2*len(s.slots), 64))
	mask := len(s.slots) - 1
	for n := range uint32(len(s.end)) {
		str := s.At(n)
		i := int(maphash.String(s.seed, str)) & mask
		for s.slots[i].numPlus != 0 {
			i = (i + 1) & mask
		}
		s.slots[i] = s.slotFor(str, n)
	}
}
