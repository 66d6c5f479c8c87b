package tcc

import (
	"encoding/binary"

	"github.com/meridian-kv/meridian/protocol"
	"github.com/meridian-kv/meridian/protocol/txn"
)

// VersionLog is a partition's record of every version of its keys in version order, for the
// checker (protocol.VersionOrderer): EC's and Wren's stamps, Eiger's commit times, the geo
// extension's ranks. The protocols' own state forgets old versions (last-writer-wins keeps one,
// garbage collection drops the rest), but the checker needs them all, and a record of every
// write kept in the replica would be rewritten into every checkpoint: checkpoints, and restarts,
// would grow with the run. So the record lives on the replica's protocol.Disk instead, one Disk
// key per version, written once with the input that made it and never part of a checkpoint
// (the network server keeps it in the node's Pebble; the simulator in memory).
//
// Nothing the replica decides depends on the log: it is only read to report the order. It still
// grows with the run, so a driver may switch it off (protocol.RecordsVersions: a real cluster's
// nodes do not with record_versions: false); Add then does nothing and Order reports nothing.
type VersionLog struct {
	disk    protocol.Disk // nil when not recording
	scratch []byte
}

// versionLogPrefix starts every Disk key of a VersionLog; versionLogEnd bounds them. A key is
// the prefix, the data key's length (uvarint) and bytes, the version's rank (each element
// big-endian with the sign bit flipped, so that byte order is signed order) and the writer
// (big-endian): the Disk's byte order is the version order, key by key.
var (
	versionLogPrefix = []byte("tcc-versions/")
	versionLogEnd    = []byte("tcc-versions0")
)

// NewVersionLog returns the version log kept on env's Disk (protocol.DiskOf: call it once per
// replica, since an Env without a Disk of its own gets a fresh one each time).
func NewVersionLog(env protocol.Env) *VersionLog {
	if !protocol.RecordsVersions(env) {
		return &VersionLog{}
	}
	return &VersionLog{disk: protocol.DiskOf(env)}
}

// Add records that writer wrote a version of key at place rank in the key's order: a key's
// versions are ordered by rank, element by element, then by writer. Adding a version again
// changes nothing.
func (l *VersionLog) Add(key string, writer txn.ID, rank ...int64) {
	if l.disk == nil {
		return
	}
	b := append(l.scratch[:0], versionLogPrefix...)
	b = binary.AppendUvarint(b, uint64(len(key)))
	b = append(b, key...)
	for _, x := range rank {
		b = binary.BigEndian.AppendUint64(b, uint64(x)^1<<63)
	}
	b = binary.BigEndian.AppendUint64(b, uint64(writer))
	l.disk.Set(b, nil)
	l.scratch = b
}

// Order returns every recorded key's writers in version order (protocol.VersionOrderer).
func (l *VersionLog) Order() map[string][]txn.ID {
	out := map[string][]txn.ID{}
	if l.disk == nil {
		return out
	}
	var name []byte // the current key's length and bytes, as the Disk keys start
	var key string
	var ids []txn.ID
	l.disk.Scan(versionLogPrefix, versionLogEnd, func(k, _ []byte) bool {
		rest := k[len(versionLogPrefix):]
		n, w := binary.Uvarint(rest)
		if w <= 0 || n > uint64(len(rest)-w) || uint64(len(rest)-w)-n < 8 {
			return true // not written by Add
		}
		if next := rest[:w+int(n)]; ids == nil || string(next) != string(name) {
			if ids != nil {
				out[key] = ids
			}
			name = append(name[:0], next...)
			key, ids = string(next[w:]), nil
		}
		ids = append(ids, txn.ID(binary.BigEndian.Uint64(k[len(k)-8:])))
		return true
	})
	if ids != nil {
		out[key] = ids
	}
	return out
}
