package txn

import (
	"strconv"
	"testing"
)

// TestStringsNumbersInOrder interns enough strings to grow the table several times, with
// repeats and the empty string, and checks the numbers, At and Lookup.
func TestStringsNumbersInOrder(t *testing.T) {
	var s Strings
	if _, ok := s.Lookup("x"); ok {
		t.Fatal("Lookup on an empty table found x")
	}
	want := []string{"", "k1234567890", "k12345678901", "k123456789012345678901234567890"} // 11, 12 bytes: held whole, in the arena
	for i := range 5000 {
		want = append(want, "k"+strconv.Itoa(i*7), "long key number "+strconv.Itoa(i))
	}
	for round := range 2 { // the second round finds every string numbered already
		for n, str := range want {
			if got := s.Intern(str); got != uint32(n) {
				t.Fatalf("round %d: Intern(%q) = %d, want %d", round, str, got, n)
			}
		}
	}
	if s.Len() != len(want) {
		t.Fatalf("Len() = %d, want %d", s.Len(), len(want))
	}
	for n, str := range want {
		if got := s.At(uint32(n)); got != str {
			t.Fatalf("At(%d) = %q, want %q", n, got, str)
		}
		if got, ok := s.Lookup(str); !ok || got != uint32(n) {
			t.Fatalf("Lookup(%q) = %d, %t, want %d", str, got, ok, n)
		}
	}
	for _, absent := range []string{"absent", "k1234567891", "long key number 5000", "k123456789012345678901234567891"} {
		if _, ok := s.Lookup(absent); ok {
			t.Fatalf("Lookup found %q, never interned", absent)
		}
	}
	if got, ok := s.LookupBytes([]byte("long key number 17")); !ok || s.At(got) != "long key number 17" {
		t.Fatalf("LookupBytes(long key number 17) = %d, %t", got, ok)
	}
}
