package server

import (
	"bytes"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strings"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"
)

// inputLog is the node's write-ahead log of replica inputs, kept in Pebble. Every input the event
// loop hands the replica (start, peer message, client request, timer) is recorded together with
// the clock readings the replica took while handling it; the batch of one loop iteration is made
// durable before any of its outputs (messages, replies) leave the node. After a crash, replaying
// the log through a fresh replica rebuilds exactly the state whose effects others may have seen,
// so an acknowledged commit is never lost — for any deterministic sans-IO protocol, unchanged.
// One fsync per loop iteration at most (group commit), and none for an iteration with no output
// to release: its batch becomes durable with the next one that has (see batch.commit). A local
// read (protocol.LocalReader) is not recorded, and its reply waits only for the inputs before it.
type inputLog struct {
	db   *pebble.DB
	next uint64 // sequence number of the next record
	sync bool
	// logged counts the bytes of the records added since the last checkpoint (or the start).
	logged int64
	key    []byte // scratch for the key of the record being added (the batch copies it)
	// unsynced: a batch was written without the fsync since the last one with it.
	unsynced bool
}

var (
	inputPrefix     = []byte("in/")
	clientIDKey     = []byte("meta/client-id-next")
	clientKeyKey    = []byte("meta/client-token-key")
	errInputCorrupt = errors.New("server: corrupt input log record")
)

// openInputLog opens (or creates) the input log in dir. Pebble logs through logger (see
// storageLogger): its errors always, its informational lines and events only if verbose.
func openInputLog(dir string, sync bool, logger *slog.Logger, verbose bool) (*inputLog, error) {
	return openInputLogOn(vfs.Default, dir, sync, logger, verbose)
}

// openInputLogOn is openInputLog on the file system fs (tests crash an in-memory one).
func openInputLogOn(fs vfs.FS, dir string, sync bool, logger *slog.Logger, verbose bool) (*inputLog, error) {
	sl := &storageLogger{logger: logger.With("component", "pebble"), verbose: verbose, exit: os.Exit}
	opts := &pebble.Options{Logger: sl, FS: fs}
	if verbose {
		// Every event (WAL files, flushes, compactions, tables created and deleted) as an
		// informational line; data corruption stays fatal, as by default.
		el := pebble.MakeLoggingEventListener(sl)
		el.DataCorruption = nil
		opts.EventListener = &el
	}
	// Otherwise the EventListener stays nil, and Pebble's defaults log nothing but a background
	// error (Errorf) and data corruption (Fatalf), both through sl.
	db, err := pebble.Open(dir, opts)
	if err != nil {
		return nil, fmt.Errorf("open data directory %s: %w", dir, err)
	}
	l := &inputLog{db: db, sync: sync}
	iter, err := db.NewIter(&pebble.IterOptions{LowerBound: inputPrefix, UpperBound: []byte("in0")})
	if err != nil {
		db.Close()
		return nil, err
	}
	if iter.Last() {
		l.next = binary.BigEndian.Uint64(iter.Key()[len(inputPrefix):]) + 1
	}
	if err := iter.Close(); err != nil {
		db.Close()
		return nil, err
	}
	return l, nil
}

// storageLogger is Pebble's Logger: it writes Pebble's lines to a slog.Logger. Informational
// lines (WAL recovery, "Found 0 WALs", events) are dropped unless verbose, and then logged at info
// level; errors are always logged, at error level. A fatal error is logged at error level and
// then ends the process with status 1, as Pebble's default logger does: Pebble expects Fatalf not
// to return.
type storageLogger struct {
	logger  *slog.Logger
	verbose bool
	exit    func(code int) // os.Exit, but for tests
}

// Infof implements pebble.Logger.
func (l *storageLogger) Infof(format string, args ...any) {
	if l.verbose {
		l.logger.Info(storageLine(format, args))
	}
}

// Errorf implements pebble.Logger.
func (l *storageLogger) Errorf(format string, args ...any) {
	l.logger.Error(storageLine(format, args))
}

// Fatalf implements pebble.Logger.
func (l *storageLogger) Fatalf(format string, args ...any) {
	l.logger.Error(storageLine(format, args), "fatal", true)
	l.exit(1)
}

// storageLine formats one of Pebble's log lines, without its trailing newline.
func storageLine(format string, args []any) string {
	return strings.TrimRight(fmt.Sprintf(format, args...), "\n")
}

func inputKey(seq uint64) []byte {
	return binary.BigEndian.AppendUint64(append([]byte(nil), inputPrefix...), seq)
}

// replay calls fn with every recorded input from sequence number from on, in order.
func (l *inputLog) replay(from uint64, fn func(rec []byte) error) error {
	iter, err := l.db.NewIter(&pebble.IterOptions{LowerBound: inputKey(from), UpperBound: []byte("in0")})
	if err != nil {
		return err
	}
	for iter.First(); iter.Valid(); iter.Next() {
		if err := fn(iter.Value()); err != nil {
			iter.Close()
			return err
		}
	}
	return iter.Close()
}

// batch collects one loop iteration's records.
type batch struct {
	log *inputLog
	b   *pebble.Batch
	n   int
	// durable: an input of the iteration put out a message or reply, which may leave only once
	// the inputs before it (and its own, if recorded) are durable.
	durable bool
}

// newBatch starts a batch; an indexed one if the replica reads its Disk through it.
func (l *inputLog) newBatch(indexed bool) *batch {
	if indexed {
		return &batch{log: l, b: l.db.NewIndexedBatch()}
	}
	return &batch{log: l, b: l.db.NewBatch()}
}

// add appends rec, which the batch copies: the caller may reuse its buffer.
func (b *batch) add(rec []byte) error {
	b.log.key = binary.BigEndian.AppendUint64(append(b.log.key[:0], inputPrefix...), b.log.next)
	if err := b.b.Set(b.log.key, rec, nil); err != nil {
		return err
	}
	b.log.next++
	b.log.logged += int64(len(rec))
	b.n++
	return nil
}

// releases notes that the input just handled put out a message or reply (see durable).
func (b *batch) releases() { b.durable = true }

// commit writes the batch to the log. If the iteration releases anything (durable) and
// durability is not none, it makes the batch durable together with every batch written before
// it (one fsync), or, if the batch is empty, just those earlier batches, if any were written
// without the fsync. Otherwise it writes the batch without the fsync: a crash may lose it, which
// loses nothing anyone saw, as a crash loses the inputs still queued for the loop; Pebble's
// write-ahead log is one sequential file, so the next fsync covers it.
func (b *batch) commit() error {
	defer b.b.Close()
	l := b.log
	sync := l.sync && b.durable && (b.n > 0 || l.unsynced)
	switch {
	case sync && b.n == 0:
		// Nothing new to write; an empty WAL record carries the fsync of the earlier batches.
		if err := b.b.LogData(nil, nil); err != nil {
			return err
		}
	case b.n == 0:
		return nil
	}
	opts := pebble.NoSync
	if sync {
		opts = pebble.Sync
	}
	if err := b.b.Commit(opts); err != nil {
		return err
	}
	l.unsynced = l.sync && !sync
	return nil
}

// allocateClientIDs durably reserves count client ids and returns the first. Ids are
// (nodeIndex+1)<<24 | counter, so they are unique across the cluster and across restarts.
func (l *inputLog) allocateClientIDs(nodeIndex int, count uint32) (uint32, error) {
	next := uint32(1)
	v, closer, err := l.db.Get(clientIDKey)
	switch {
	case err == nil:
		next = binary.BigEndian.Uint32(v)
		closer.Close()
	case !errors.Is(err, pebble.ErrNotFound):
		return 0, err
	}
	if uint64(next)+uint64(count) >= 1<<24 {
		return 0, fmt.Errorf("server: node %d has handed out all %d client ids", nodeIndex, 1<<24)
	}
	if err := l.db.Set(clientIDKey, binary.BigEndian.AppendUint32(nil, next+count), pebble.Sync); err != nil {
		return 0, err
	}
	return uint32(nodeIndex+1)<<24 | next, nil
}

// clientKey returns the node's secret key for client tokens, drawn and durably stored the first
// time: a client proves the id this node allocated it with a token derived from the key, also
// after a restart.
func (l *inputLog) clientKey() ([]byte, error) {
	v, closer, err := l.db.Get(clientKeyKey)
	switch {
	case err == nil:
		defer closer.Close()
		return bytes.Clone(v), nil
	case !errors.Is(err, pebble.ErrNotFound):
		return nil, err
	}
	key := make([]byte, 32)
	rand.Read(key)
	if err := l.db.Set(clientKeyKey, key, pebble.Sync); err != nil {
		return nil, err
	}
	return key, nil
}

func (l *inputLog) close() error { return l.db.Close() }
