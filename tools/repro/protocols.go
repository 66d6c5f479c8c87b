package repro

// The experiments name every kind of protocol; each registers itself when imported.
import _ "github.com/meridian-kv/meridian/protocols/all"
