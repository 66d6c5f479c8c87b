package chariots_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/meridian-kv/meridian/protocol"
	"github.com/meridian-kv/meridian/protocols/log/chariots"
	"github.com/meridian-kv/meridian/protocols/log/flstore"
)

// TestAddSpare checks the elasticity plan (spec 5.12) of each role a spare of which can join,
// and that it refuses what cannot join: an active node, a role without elasticity, a filter
// split of the filter's own datacenter.
func TestAddSpare(t *testing.T) {
	p := protocol.Params{}
	for _, r := range chariots.Elastic {
		p["spare_"+r.String()] = "1"
	}
	p["spare_senders"] = "1"
	l, err := chariots.LayoutOf(p, 2)
	if err != nil {
		t.Fatal(err)
	}
	spare := func(r flstore.Role) protocol.NodeID {
		all := l.All(0, r)
		return all[len(all)-1]
	}
	type sent struct {
		to []protocol.NodeID
		op string
	}
	want := map[flstore.Role]sent{
		flstore.Queue:      {append(append(l.Active(0, flstore.Queue), spare(flstore.Queue)), l.All(0, flstore.Filter)...), "*chariots.AddQueue"},
		flstore.Maintainer: {l.Active(0, flstore.Queue)[:1], "*chariots.AddMaintainer"},
		flstore.Batcher:    {l.All(0, flstore.Receiver), "*chariots.AddBatcher"},
		flstore.Filter:     {append(l.All(0, flstore.Batcher), l.All(0, flstore.Filter)...), "*chariots.FilterMapUpdate"},
	}
	for _, r := range chariots.Elastic {
		ctls, err := chariots.AddSpare(l, spare(r), 1, 42)
		if err != nil {
			t.Fatalf("%s: %v", r, err)
		}
		w := want[r]
		if len(ctls) != len(w.to) {
			t.Fatalf("%s: %d requests, want %d", r, len(ctls), len(w.to))
		}
		for i, c := range ctls {
			if c.To != w.to[i] || typeName(c.Op) != w.op {
				t.Fatalf("%s: request %d is %s to %d, want %s to %d", r, i, typeName(c.Op), c.To, w.op, w.to[i])
			}
		}
		if u, ok := ctls[0].Op.(*chariots.FilterMapUpdate); ok && (u.Host != 1 || u.FromTOId != 42 || u.Filters[0] != spare(r) || u.Filters[1] != l.Active(0, flstore.Filter)[0]) {
			t.Fatalf("filter split %+v", u)
		}
	}
	for _, c := range []struct {
		node protocol.NodeID
		host int
		err  string
	}{
		{l.Active(0, flstore.Batcher)[0], 1, "not a spare"},
		{spare(flstore.Sender), 1, "cannot join"},
		{spare(flstore.Filter), 0, "another datacenter"},
		{spare(flstore.Filter), 2, "another datacenter"},
		{protocol.NodeID(len(l.Nodes)), 1, "no node"},
	} {
		if _, err := chariots.AddSpare(l, c.node, c.host, 1); err == nil || !strings.Contains(err.Error(), c.err) {
			t.Fatalf("node %d host %d: %v, want an error naming %q", c.node, c.host, err, c.err)
		}
	}
}

func typeName(m protocol.Message) string { return fmt.Sprintf("%T", m) }
