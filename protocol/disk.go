package protocol

import "github.com/meridian-kv/meridian/protocol/store"

// Disk is a replica's durable key-value space, for state too large to keep in memory or to write
// into every checkpoint: a log maintainer's records. A driver that offers one implements
// DiskEnv; a replica built on an Env without one gets an in-memory Disk (DiskOf), which is what
// the simulator's crashes (fail-stop, state kept) amount to.
//
// Set takes effect at once for the replica's later reads, and becomes durable with the input
// that made it, before any output of that input leaves the node: the network server writes it
// into the Pebble batch that logs the input. Nothing on a Disk is part of a checkpoint
// (protocol.Checkpointer), so a checkpoint holds the replica's metadata only.
//
// A restarted server restores its newest checkpoint and replays the inputs after it against the
// Disk as the crash left it, which already holds those inputs' writes (the server drops the
// writes made while replaying). So a replica's state must never depend on what it reads from
// its Disk, only its outputs (messages, replies) may, and those of a replayed input are dropped.
type Disk interface {
	// Get returns key's value (the caller must not modify it), or false if it has none.
	Get(key []byte) (value []byte, ok bool)
	// Set gives key the value (both copied).
	Set(key, value []byte)
	// Scan calls fn with every key in [from, to) in order and its value (valid during the call
	// only), until fn returns false.
	Scan(from, to []byte, fn func(key, value []byte) bool)
	// ScanReverse is Scan from the last key before to down to from: the newest entries of a
	// range first (an indexer's most recent positions of a tag).
	ScanReverse(from, to []byte, fn func(key, value []byte) bool)
}

// DiskEnv is implemented by an Env whose driver keeps a Disk for its replica.
type DiskEnv interface {
	Disk() Disk
}

// DiskOf returns env's Disk, or a new in-memory one if its driver keeps none.
func DiskOf(env Env) Disk {
	if d, ok := env.(DiskEnv); ok {
		return d.Disk()
	}
	return store.NewMemDisk()
}

// VersionRecorder is implemented by an Env whose driver decides whether its replica records the
// checker's version order of every key (protocol.VersionOrderer), which grows with the run: the
// network server records it unless its cluster file says record_versions: false.
type VersionRecorder interface {
	RecordsVersions() bool
}

// RecordsVersions reports whether env's replica should record the checker's version order: what
// its driver says (VersionRecorder), else true, as the simulator and the tests always check.
func RecordsVersions(env Env) bool {
	if r, ok := env.(VersionRecorder); ok {
		return r.RecordsVersions()
	}
	return true
}
