package server

import (
	"bytes"
	"errors"
	"fmt"

	"github.com/cockroachdb/pebble/v2"
)

// diskPrefix + a replica's key holds that key of the replica's Disk (protocol.Disk), in the
// node's Pebble next to the input log, checkpoints and store segments ("disk0" bounds it).
var diskPrefix = []byte("disk/")

// disk is the replica's protocol.Disk in the network runtime. While the loop handles a batch of
// inputs, writes go into that batch (indexed, so that reads see them) and become durable with
// the inputs that made them, before their outputs are released. While the node replays its
// input log the writes are dropped: the batches that logged those inputs wrote them already.
// A failed read is kept in err, which ends the event loop as a failed write does.
type disk struct {
	db    *pebble.DB
	batch *pebble.Batch // the loop's current batch; nil while replaying
	used  bool          // the replica asked for its Disk: the loop's batches are indexed
	err   error
}

func diskKey(key []byte) []byte { return append(bytes.Clone(diskPrefix), key...) }

// reader returns what reads go through: the current batch and the database under it.
func (d *disk) reader() pebble.Reader {
	if d.batch != nil {
		return d.batch
	}
	return d.db
}

// Get implements protocol.Disk.
func (d *disk) Get(key []byte) ([]byte, bool) {
	v, closer, err := d.reader().Get(diskKey(key))
	if errors.Is(err, pebble.ErrNotFound) {
		return nil, false
	}
	if err != nil {
		d.fail(err)
		return nil, false
	}
	defer closer.Close()
	return bytes.Clone(v), true
}

// Set implements protocol.Disk.
func (d *disk) Set(key, value []byte) {
	if d.batch == nil {
		return // replaying: durable already
	}
	if err := d.batch.Set(diskKey(key), value, nil); err != nil {
		d.fail(err)
	}
}

// Scan implements protocol.Disk.
func (d *disk) Scan(from, to []byte, fn func(key, value []byte) bool) {
	d.scan(from, to, (*pebble.Iterator).First, (*pebble.Iterator).Next, fn)
}

// ScanReverse implements protocol.Disk.
func (d *disk) ScanReverse(from, to []byte, fn func(key, value []byte) bool) {
	d.scan(from, to, (*pebble.Iterator).Last, (*pebble.Iterator).Prev, fn)
}

// scan calls fn with the keys in [from, to), from the key first positions the iterator at, on
// with step, until fn returns false.
func (d *disk) scan(from, to []byte, first, step func(*pebble.Iterator) bool, fn func(key, value []byte) bool) {
	iter, err := d.reader().NewIter(&pebble.IterOptions{LowerBound: diskKey(from), UpperBound: diskKey(to)})
	if err != nil {
		d.fail(err)
		return
	}
	for ok := first(iter); ok && iter.Valid(); ok = step(iter) {
		if !fn(iter.Key()[len(diskPrefix):], iter.Value()) {
			break
		}
	}
	if err := iter.Close(); err != nil {
		d.fail(err)
	}
}

func (d *disk) fail(err error) {
	if d.err == nil {
		d.err = fmt.Errorf("server: the replica's disk: %w", err)
	}
}
