package server

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"
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
