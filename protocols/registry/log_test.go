package registry_test

import (
	"testing"

	"github.com/meridian-kv/meridian/protocol"
	"github.com/meridian-kv/meridian/protocols/registry"
)

// TestLogFamily: the shared logs are registered as the Log family, which is not transactional,
// serves operations and places its own nodes; a Log entry without Nodes is refused.
func TestLogFamily(t *testing.T) {
	for _, name := range []string{"flstore", "chariots"} {
		e, err := registry.Lookup(name)
		if err != nil {
			t.Fatal(err)
		}
		if e.Family != registry.Log || e.Family.Transactional() || !e.ServesOperations() || e.Nodes == nil || e.Roles == nil {
			t.Fatalf("%s: %+v", name, e)
		}
	}
	if e, _ := registry.Lookup("helios-0"); !e.Family.Transactional() || e.ServesOperations() {
		t.Fatal("helios-0 is transactional and serves no operations")
	}
	defer func() {
		if recover() == nil {
			t.Fatal("a log protocol without Nodes was registered")
		}
	}()
	registry.Register("log-without-nodes", registry.Entry{Family: registry.Log,
		New: func(protocol.Config, protocol.Env) (protocol.Replica, error) { return nil, nil }})
}
