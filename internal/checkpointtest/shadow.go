package checkpointtest

import (
	"github.com/meridian-kv/meridian/protocol"
	"github.com/meridian-kv/meridian/protocols/registry"
)

// Shadow returns entry's factory with every replica that writes checkpoints shadowed as
// RoundTrip does (replicas that write none run unshadowed), for drivers other than the
// swarm's: the shared logs' simulator runs. result reports the checkpoints restored and
// followed, and the first difference.
func Shadow(entry registry.Entry) (factory protocol.Factory, result func() (restored int, err error)) {
	h := &harness{entry: entry, allowPlain: true}
	return h.factory, func() (int, error) { return h.restored, h.err }
}
