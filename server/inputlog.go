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
)

// inputLog is the node's write-ahead log of replica inputs, kept in Pebble. Every input the event
// loop hands the replica (start, peer message, client request, timer) is recorded together with
// the clock readings the replica took while handling it; the batch of one loop iteration is made
// durable before any of its outputs (messages, replies) leave the node. After a crash, replaying
// the log through a fresh replica rebuilds exactly the state whose effects others may have seen,
// so an acknowledged commit is never lost — for any deterministic sans-IO protocol, unchanged.
type inputLog struct {
	db   *pebble.DB
	next uint64 // sequence number of the next record
	sync bool
	// logged counts the bytes of the records added since the last checkpoint (or the start).
	logged int64
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
	sl := &storageLogger{logger: logger.With("component", "pebble"), verbose: verbose, exit: os.Exit}
	opts := &pebble.Options{Logger: sl}
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
}

// newBatch starts a batch; an indexed one if the replica reads its Disk through it.
func (l *inputLog) newBatch(indexed bool) *batch {
	if indexed {
		return &batch{log: l, b: l.db.NewIndexedBatch()}
	}
	return &batch{log: l, b: l.db.NewBatch()}
}

func (b *batch) add(rec []byte) error {
	if err := b.b.Set(inputKey(b.log.next), rec, nil); err != nil {
		return err
	}
	b.log.next++
	b.log.logged += int64(len(rec))
	b.n++
	return nil
}

// commit makes the batch durable (fsync unless durability is none).
func (b *batch) commit() error {
	defer b.b.Close()
	if b.n == 0 {
		return nil
	}
	opts := pebble.NoSync
	if b.log.sync {
		opts = pebble.Sync
	}
	return b.b.Commit(opts)
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
