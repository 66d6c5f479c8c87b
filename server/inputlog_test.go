package server

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"
)

// openAndReopen writes a record to a fresh input log in a temporary directory, closes it, opens
// it again (which replays the WAL) and returns everything logged meanwhile.
func openAndReopen(t *testing.T, verbose bool) string {
	t.Helper()
	var buf bytes.Buffer
	logger := slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug}))
	dir := t.TempDir()
	l, err := openInputLog(dir, true, logger, verbose)
	if err != nil {
		t.Fatal(err)
	}
	b := l.newBatch(false)
	if err := b.add([]byte("record")); err != nil {
		t.Fatal(err)
	}
	b.releases()
	if err := b.commit(); err != nil {
		t.Fatal(err)
	}
	if err := l.close(); err != nil {
		t.Fatal(err)
	}
	if l, err = openInputLog(dir, true, logger, verbose); err != nil {
		t.Fatal(err)
	}
	if l.next != 1 {
		t.Errorf("reopened log: next record %d, want 1", l.next)
	}
	if err := l.close(); err != nil {
		t.Fatal(err)
	}
	return buf.String()
}

// TestInputLogQuietByDefault: Pebble's informational lines (WAL recovery on open) are dropped
// unless verbose, and then logged at info level, marked component=pebble.
func TestInputLogQuietByDefault(t *testing.T) {
	if out := openAndReopen(t, false); out != "" {
		t.Errorf("Pebble logged without verbose:\n%s", out)
	}
	out := openAndReopen(t, true)
	if !strings.Contains(out, "level=INFO") || !strings.Contains(out, "component=pebble") || !strings.Contains(out, "WAL") {
		t.Errorf("verbose: no informational WAL lines from Pebble:\n%s", out)
	}
}

// TestStorageLogger: errors are always logged, at error level; Fatalf logs and then exits with
// status 1.
func TestStorageLogger(t *testing.T) {
	var buf bytes.Buffer
	exited := -1
	l := &storageLogger{logger: slog.New(slog.NewTextHandler(&buf, nil)), exit: func(code int) { exited = code }}
	l.Infof("quiet %d\n", 1)
	if buf.Len() != 0 {
		t.Errorf("Infof without verbose logged %q", buf.String())
	}
	l.Errorf("background error: %s\n", "disk full")
	if got := buf.String(); !strings.Contains(got, `level=ERROR msg="background error: disk full"`) {
		t.Errorf("Errorf logged %q", got)
	}
	buf.Reset()
	l.Fatalf("corrupt %s", "000001.sst")
	if got := buf.String(); !strings.Contains(got, `level=ERROR msg="corrupt 000001.sst" fatal=true`) || exited != 1 {
		t.Errorf("Fatalf logged %q and exited with %d, want status 1", got, exited)
	}
	buf.Reset()
	l.verbose = true
	l.Infof("[JOB %d] WAL replayed", 1)
	if got := buf.String(); !strings.Contains(got, `level=INFO msg="[JOB 1] WAL replayed"`) {
		t.Errorf("verbose Infof logged %q", got)
	}
}

// TestInputLogCrashKeepsWhatADurableCommitCovers: a batch committed without the fsync (a loop
// turn that released nothing) survives a crash once a later batch that releases something is
// committed, even an empty one (a turn of local reads only), and is lost, with nothing after it,
// if none is.
func TestInputLogCrashKeepsWhatADurableCommitCovers(t *testing.T) {
	for _, tc := range []struct {
		name  string
		turns []turn
		want  []byte // the records left after the crash, numbered by turn
	}{
		{"last turn releases nothing", []turn{{true, false}, {true, true}, {true, false}}, []byte{0, 1}},
		{"empty turn releases", []turn{{true, false}, {true, true}, {true, false}, {false, true}}, []byte{0, 1, 2}},
		{"nothing to sync", []turn{{true, true}, {false, true}}, []byte{0}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := crashAfter(t, tc.turns); !bytes.Equal(got, tc.want) {
				t.Errorf("after the crash the log holds records %v, want %v", got, tc.want)
			}
		})
	}
}

// turn is one loop iteration of crashAfter: whether it records an input and whether it releases
// a message or reply.
type turn struct {
	record, releases bool
}

// crashAfter commits one batch per turn (a record numbered by the turn if record; releases
// noted if releases) to an input log on an in-memory file system, crashes it (keeping exactly
// what was synced) and returns the records the reopened log holds.
func crashAfter(t *testing.T, turns []turn) []byte {
	t.Helper()
	logger := slog.New(slog.NewTextHandler(&bytes.Buffer{}, nil))
	mem := vfs.NewCrashableMem()
	l, err := openInputLogOn(mem, "data", true, logger, false)
	if err != nil {
		t.Fatal(err)
	}
	for i, tu := range turns {
		b := l.newBatch(false)
		if tu.record {
			if err := b.add([]byte{byte(i)}); err != nil {
				t.Fatal(err)
			}
		}
		if tu.releases {
			b.releases()
		}
		if err := b.commit(); err != nil {
			t.Fatal(err)
		}
	}
	crashed := mem.CrashClone(vfs.CrashCloneCfg{})
	if err := l.close(); err != nil {
		t.Fatal(err)
	}
	if l, err = openInputLogOn(crashed, "data", true, logger, false); err != nil {
		t.Fatal(err)
	}
	defer l.close()
	var got []byte
	if err := l.replay(0, func(rec []byte) error { got = append(got, rec...); return nil }); err != nil {
		t.Fatal(err)
	}
	return got
}
