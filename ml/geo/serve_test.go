package geo

import (
	"strings"
	"testing"

	"github.com/meridian-kv/meridian/protocol"
	"github.com/meridian-kv/meridian/protocols/registry"
)

// TestPipelineParams: cop-geo's parameters are checked with errors naming the one at fault,
// and the registry places a centre and four sources on Fig. 6.1's five datacenters.
func TestPipelineParams(t *testing.T) {
	for _, c := range []struct {
		p    protocol.Params
		dcs  int
		want string
	}{
		{nil, 3, "a centre and 4 sources run on 5 datacenters"},
		{protocol.Params{"sample": "3"}, 5, `unknown parameter "sample"`},
		{protocol.Params{"scheme": "foo"}, 5, "parameter scheme"},
		{protocol.Params{"dataset": "mnist"}, 5, `parameter dataset "mnist" is not a generator`},
		{protocol.Params{"samples": "3"}, 5, "samples (at least 4)"},
		{protocol.Params{"resend": "0s"}, 5, "resend positive"},
		{protocol.Params{"collect": "soon"}, 5, "parameter collect"},
	} {
		if _, err := ParseParams(c.p, c.dcs); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("ParseParams(%v, %d) = %v, want %q", c.p, c.dcs, err, c.want)
		}
	}
	e, err := registry.Lookup(ProtocolName)
	if err != nil || e.Family != registry.Pipeline || e.Family.Transactional() {
		t.Fatalf("%+v, %v", e, err)
	}
	nodes, err := e.Nodes(nil, Sources+1)
	roles, _ := e.Roles(nil, Sources+1)
	if err != nil || len(nodes) != Sources+1 || nodes[CentreNode].DC != 0 || roles[0] != "centre" || roles[1] != "source-1" {
		t.Fatalf("nodes %v, roles %v, %v", nodes, roles, err)
	}
}
