package history

import (
	"hash/maphash"
	"unsafe"
)

// Strings numbers distinct strings 0, 1, 2, … in order of first appearance, compactly and
// without a pointer per string: their bytes lie one after the other in one arena and the
// look-up table is an open-addressing array of numbers. A long run's history names hundreds of
// thousands of keys: a []string with a map[string]uint32 costs about 38 bytes a key here and
// gives the garbage collector two pointers a key to follow at every collection; Strings costs
// about 20 bytes a key ("k123456": 7 bytes, an 8-byte end offset, two 4-byte slots) and nothing
// to follow. The zero Strings is empty and ready to use; it is not safe for concurrent use.
type Strings struct {
	// data holds the strings' bytes. Bytes once written are never written again (append only
	// writes past the length), so the strings At hands out, which point into data, stay valid
	// and unchanged even after data moves to a larger array.
	data  []byte
	end   []int    // string i is data[end[i-1]:end[i]], with end[-1] taken as 0
	slots []uint32 // 0 for an empty slot, else a string's number plus 1; a power of two, at most half full
	seed  maphash.Seed
}

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
		return s.slots[slot] - 1
	}
	n := uint32(len(s.end))
	s.data = append(s.data, str...)
	s.end = append(s.end, len(s.data))
	if 2*(len(s.end)) > len(s.slots) {
		s.grow()
	} else {
		s.slots[slot] = n + 1
	}
	return n
}

// Lookup returns str's number, if it has one.
func (s *Strings) Lookup(str string) (uint32, bool) {
	slot, found := s.find(str)
	if !found {
		return 0, false
	}
	return s.slots[slot] - 1, true
}

// find returns the slot that holds str's number (found) or the empty slot where it belongs
// (then slot is -1 if the table has no slot at all).
func (s *Strings) find(str string) (slot int, found bool) {
	if len(s.slots) == 0 {
		return -1, false
	}
	mask := len(s.slots) - 1
	for i := int(maphash.String(s.seed, str)) & mask; ; i = (i + 1) & mask {
		e := s.slots[i]
		if e == 0 {
			return i, false
		}
		if s.At(e-1) == str {
			return i, true
		}
	}
}

// grow doubles the table (or makes the first one) and slots every string in again.
func (s *Strings) grow() {
	if len(s.slots) == 0 {
		s.seed = maphash.MakeSeed() // the numbering never depends on the hash
	}
	s.slots = make([]uint32, max(2*len(s.slots), 64))
	mask := len(s.slots) - 1
	for n := range uint32(len(s.end)) {
		i := int(maphash.String(s.seed, s.At(n))) & mask
		for s.slots[i] != 0 {
			i = (i + 1) & mask
		}
		s.slots[i] = n + 1
	}
}
