package txn

import (
	"encoding/binary"
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
	seed  maphash.Seed // hashes long strings
	salt  uint64       // hashes short strings (hashShort)
}

// slotInline is the length up to which a string is held whole in its slot.
const slotInline = 11

// stringSlot is one slot of a Strings table: empty (numPlus 0) or string numPlus-1. A string of
// up to slotInline bytes is held whole in lo and hi: its bytes 0-7 in lo and 8-10 in hi's low
// three bytes (little-endian, zero past its end), its length in hi's top byte; so finding it
// compares two words, and hashing it mixes them. A longer string has hi's top byte slotLong and
// is compared in the arena.
type stringSlot struct {
	lo      uint64
	hi      uint32
	numPlus uint32
}

// slotLong is the top byte of stringSlot.hi of a string longer than slotInline.
const slotLong = 255

// packShort returns the words stringSlot holds for str, of at most slotInline bytes.
func packShort(str string) (lo uint64, hi uint32) {
	var b [12]byte
	copy(b[:], str)
	b[11] = byte(len(str))
	return binary.LittleEndian.Uint64(b[:8]), binary.LittleEndian.Uint32(b[8:])
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
		return s.slots[slot].numPlus - 1
	}
	n := uint32(len(s.end))
	s.data = append(s.data, str...)
	s.end = append(s.end, len(s.data))
	if 4*len(s.end) > 3*len(s.slots) {
		s.grow()
	} else {
		s.slots[slot], _ = s.slotFor(str, n)
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
	if len(str) <= slotInline {
		lo, hi := packShort(str)
		for i := s.hashShort(lo, hi) & mask; ; i = (i + 1) & mask {
			if e := &s.slots[i]; e.numPlus == 0 || e.lo == lo && e.hi == hi {
				return i, e.numPlus != 0
			}
		}
	}
	for i := int(maphash.String(s.seed, str)) & mask; ; i = (i + 1) & mask {
		switch e := &s.slots[i]; {
		case e.numPlus == 0:
			return i, false
		case e.hi>>24 == slotLong && s.At(e.numPlus-1) == str:
			return i, true
		}
	}
}

// hashShort hashes a short string's slot words (packShort) with the table's salt: a multiply
// and the splitmix64 finalizer, cheaper than maphash for the 16 bytes at hand.
func (s *Strings) hashShort(lo uint64, hi uint32) int {
	z := (lo^s.salt)*0x9e3779b97f4a7c15 + uint64(hi)
	z = (z ^ z>>30) * 0xbf58476d1ce4e5b9
	z = (z ^ z>>27) * 0x94d049bb133111eb
	return int(z ^ z>>31)
}

// slotFor returns the slot of str, numbered n, and where to start looking for it.
func (s *Strings) slotFor(str string, n uint32) (stringSlot, int) {
	if len(str) <= slotInline {
		lo, hi := packShort(str)
		return stringSlot{lo: lo, hi: hi, numPlus: n + 1}, s.hashShort(lo, hi)
	}
	return stringSlot{hi: slotLong << 24, numPlus: n + 1}, int(maphash.String(s.seed, str))
}

// grow doubles the table (or makes the first one) and slots every string in again.
func (s *Strings) grow() {
	if len(s.slots) == 0 {
		s.seed = maphash.MakeSeed() // the numbering never depends on the hash
		s.salt = maphash.String(s.seed, "")
	}
	s.slots = make([]stringSlot, max(2*len(s.slots), 64))
	mask := len(s.slots) - 1
	for n := range uint32(len(s.end)) {
		e, h := s.slotFor(s.At(n), n)
		i := h & mask
		for s.slots[i].numPlus != 0 {
			i = (i + 1) & mask
		}
		s.slots[i] = e
	}
}
