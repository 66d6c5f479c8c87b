package server

import (
	"io"
	"log/slog"
	"testing"
)

// TestDisk: a replica's writes are read back within the batch that makes them, durable with
// it, scanned in key order within bounds, and dropped while replaying (batch nil).
func TestDisk(t *testing.T) {
	l, err := openInputLog(t.TempDir(), false, slog.New(slog.NewTextHandler(io.Discard, nil)), false)
	if err != nil {
		t.Fatal(err)
	}
	defer l.close()
	d := &disk{db: l.db, used: true}
	b := l.newBatch(d.used)
	d.batch = b.b
	d.Set([]byte("r2"), []byte("two"))
	d.Set([]byte("r1"), []byte("one"))
	d.Set([]byte("s"), []byte("other"))
	if v, ok := d.Get([]byte("r1")); !ok || string(v) != "one" {
		t.Fatalf("within the batch: %q %v", v, ok)
	}
	if err := b.add([]byte("input")); err != nil {
		t.Fatal(err)
	}
	if err := b.commit(); err != nil {
		t.Fatal(err)
	}
	d.batch = nil
	d.Set([]byte("r3"), []byte("replayed")) // replaying: dropped
	var got []string
	d.Scan([]byte("r"), []byte("s"), func(k, v []byte) bool {
		got = append(got, string(k)+"="+string(v))
		return true
	})
	if len(got) != 2 || got[0] != "r1=one" || got[1] != "r2=two" || d.err != nil {
		t.Fatalf("after the commit: %v (err %v)", got, d.err)
	}
	got = nil
	d.ScanReverse([]byte("r"), []byte("t"), func(k, v []byte) bool {
		got = append(got, string(k))
		return len(got) < 2
	})
	if len(got) != 2 || got[0] != "s" || got[1] != "r2" || d.err != nil {
		t.Fatalf("reverse scan: %v (err %v)", got, d.err)
	}
	if _, ok := d.Get([]byte("missing")); ok {
		t.Fatal("a missing key was found")
	}
}
