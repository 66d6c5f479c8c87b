package store

import "testing"

// TestMemDisk: keys written in any order scan sorted within bounds (and in reverse, from the
// upper bound down); a rewrite replaces the
// value; a clone is equal, and independent of later writes.
func TestMemDisk(t *testing.T) {
	d := NewMemDisk()
	for _, k := range []string{"r3", "r1", "h9", "r2", "r1"} {
		d.Set([]byte(k), []byte("v"+k))
	}
	d.Set([]byte("r2"), []byte("new"))
	var got []string
	d.Scan([]byte("r"), []byte("s"), func(k, v []byte) bool {
		got = append(got, string(k)+"="+string(v))
		return len(got) < 3
	})
	if len(got) != 3 || got[0] != "r1=vr1" || got[1] != "r2=new" || got[2] != "r3=vr3" {
		t.Fatalf("scan: %v", got)
	}
	got = nil
	d.ScanReverse([]byte("h"), []byte("r3"), func(k, v []byte) bool {
		got = append(got, string(k))
		return len(got) < 2
	})
	if len(got) != 2 || got[0] != "r2" || got[1] != "r1" {
		t.Fatalf("reverse scan: %v", got)
	}
	c := d.Clone()
	if !c.Equal(d) || c.Len() != 4 {
		t.Fatal("a clone differs")
	}
	d.Set([]byte("r4"), nil)
	if c.Equal(d) {
		t.Fatal("a clone follows later writes")
	}
	if v, ok := c.Get([]byte("h9")); !ok || string(v) != "vh9" {
		t.Fatalf("get: %q %v", v, ok)
	}
}
