package logclient

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	"google.golang.org/grpc"

	"github.com/meridian-kv/meridian/protocol"
	"github.com/meridian-kv/meridian/protocols/log/chariots"
	"github.com/meridian-kv/meridian/protocols/log/flstore"
	"github.com/meridian-kv/meridian/server/cluster"
)

// withJoined returns the batchers of datacenter dc a client appends through: the active ones,
// then the spares that joined (cluster.Added in the cluster file's directory), with via (a
// node name, "" for none) moved first.
func withJoined(cfg *cluster.Config, l *flstore.Layout, dc int, active []protocol.NodeID, via string) ([]protocol.NodeID, error) {
	added, err := cluster.Added(filepath.Dir(cfg.Path))
	if err != nil {
		return nil, err
	}
	out := slices.Clone(active)
	for _, name := range added {
		if i, _, err := cfg.Node(name); err == nil && l.Nodes[i].DC == dc && l.Role[i] == flstore.Batcher {
			out = append(out, protocol.NodeID(i))
		}
	}
	if via == "" {
		return out, nil
	}
	i, _, err := cfg.Node(via)
	if err != nil {
		return nil, err
	}
	at := slices.Index(out, protocol.NodeID(i))
	if at < 0 {
		return nil, fmt.Errorf("node %s is not an active or joined batcher of datacenter %s", via, cfg.Topology.DCs[dc])
	}
	home := out[at]
	return append([]protocol.NodeID{home}, slices.Delete(out, at, at+1)...), nil
}

// StageRole returns the role a spare of which can join a Chariots deployment (chariots.Elastic)
// named stage ("batcher", "filter", "queue", "maintainer").
func StageRole(stage string) (flstore.Role, error) {
	var names []string
	for _, r := range chariots.Elastic {
		name := strings.TrimSuffix(r.String(), "s")
		if name == stage {
			return r, nil
		}
		names = append(names, name)
	}
	return 0, fmt.Errorf("no stage %q can join a running Chariots deployment (want %s)", stage, strings.Join(names, ", "))
}

// chariotsLayout is the layout of the Chariots cluster cfg.
func chariotsLayout(cfg *cluster.Config) (*flstore.Layout, error) {
	if cfg.Protocol != "chariots" {
		return nil, fmt.Errorf("cluster %s runs %s: stages join a running Chariots deployment only", cfg.Path, cfg.Protocol)
	}
	l, err := chariots.LayoutOf(cfg.Params, cfg.Topology.N())
	if err != nil {
		return nil, fmt.Errorf("%s: %w", cfg.Path, err)
	}
	return l, l.Check(cfg.Placements())
}

// NextSpare names the first spare of role in datacenter dc of the Chariots cluster cfg that is
// not in added (the spares that joined already).
func NextSpare(cfg *cluster.Config, dc string, role flstore.Role, added []string) (string, error) {
	l, err := chariotsLayout(cfg)
	if err != nil {
		return "", err
	}
	d, ok := cfg.Topology.Index(dc)
	if !ok {
		return "", fmt.Errorf("cluster %s has no datacenter %q (it has %s)", cfg.Path, dc, strings.Join(cfg.Topology.DCs, ", "))
	}
	spares := 0
	for _, n := range l.All(d, role) {
		if l.Spare[n] {
			spares++
			if name := cfg.Nodes[n].Name; !slices.Contains(added, name) {
				return name, nil
			}
		}
	}
	return "", fmt.Errorf("no spare %s left in datacenter %s: %d deployed, all joined (deploy more with cluster up --set spare_%s=N)",
		strings.TrimSuffix(role.String(), "s"), dc, spares, role)
}

// DefaultSplitAheadTOIds is how far past the host's last record the datacenter logged a filter
// split starts by default (chariots.FilterMapUpdate.FromTOId): room for the batchers to learn the
// new map before records of the new filter's class arrive (spec 5.12). A batcher still on the
// old map sends such a record to the old filter, which drops it, and the sender's resend
// recovers it: a boundary too close costs time, not records; one too far delays the split.
const DefaultSplitAheadTOIds = 200

// Joined is what AddStage did: the stages it told, and for a filter the split it announced
// (the filter takes SplitHost's records with even TOIds from FromTOId on).
type Joined struct {
	Told      []string
	SplitHost string
	FromTOId  uint64
}

// AddStage makes spare node name of the running Chariots cluster cfg join its datacenter's
// pipeline (spec 5.12): it sends the requests of chariots.AddSpare, each to its stage over the
// Operate RPC, in order. A filter takes the even TOIds of host (a datacenter name; "" the first
// datacenter other than the filter's) from aheadTOIds past the host's last record in the
// filter's datacenter's log. The spare's
// process must run (cluster up starts the spares idle, as the simulator deploys them: a token
// rebuild waits for every maintainer and queue of the datacenter, spares included), and the
// batchers' clients learn a new batcher when they
// dial (Dial: cluster.Added, which the caller records). Every request is idempotent: after an
// error, AddStage may run again.
func AddStage(ctx context.Context, cfg *cluster.Config, name, host string, aheadTOIds uint64, opts ...grpc.DialOption) (Joined, error) {
	var j Joined
	l, err := chariotsLayout(cfg)
	if err != nil {
		return j, err
	}
	i, node, err := cfg.Node(name)
	if err != nil {
		return j, err
	}
	dc := node.DCIndex
	c, err := Dial(ctx, cfg, node.DC, opts...)
	if err != nil {
		return j, err
	}
	defer c.Close()
	h := -1
	if l.Role[i] == flstore.Filter {
		if h, err = splitHost(cfg, dc, host); err != nil {
			return j, err
		}
		last, err := c.lastTOId(ctx, h)
		if err != nil {
			return j, fmt.Errorf("cannot read the log of datacenter %s for the split's boundary: %w", node.DC, err)
		}
		j.SplitHost, j.FromTOId = cfg.Topology.DCs[h], last+aheadTOIds
	}
	ctls, err := chariots.AddSpare(l, protocol.NodeID(i), h, j.FromTOId)
	if err != nil {
		return j, err
	}
	for _, ctl := range ctls {
		to := cfg.Nodes[ctl.To].Name
		_, err := await(ctx, c, func(done func(struct{}, error)) {
			c.tr.CallNode(ctl.To, protocol.Request{Kind: protocol.Operation, Op: ctl.Op}, func(r protocol.Reply) {
				if r.Err != "" {
					done(struct{}{}, fmt.Errorf("%s refused %T: %s", to, ctl.Op, r.Err))
					return
				}
				done(struct{}{}, nil)
			})
		})
		if err != nil {
			return j, err
		}
		j.Told = append(j.Told, to)
	}
	return j, nil
}

// splitHost returns the datacenter whose records a new filter of datacenter dc splits: host,
// or the first other one if host is "".
func splitHost(cfg *cluster.Config, dc int, host string) (int, error) {
	if host == "" {
		return (dc + 1) % cfg.Topology.N(), nil
	}
	h, ok := cfg.Topology.Index(host)
	if !ok || h == dc {
		return 0, fmt.Errorf("a new filter splits the records of another datacenter; %q is not one (the filter is in %s; datacenters %s)",
			host, cfg.Topology.DCs[dc], strings.Join(cfg.Topology.DCs, ", "))
	}
	return h, nil
}

// lastTOId returns the TOId of host's last record in the client's datacenter's log up to its
// head (0: none), reading back from the head readChunk positions at a time.
func (c *Client) lastTOId(ctx context.Context, host int) (uint64, error) {
	h, err := c.Head(ctx)
	if err != nil {
		return 0, err
	}
	for hi := h.HL; hi > 0; {
		lo := max(hi, readChunk) - readChunk + 1
		recs, err := c.Read(ctx, lo, hi)
		if err != nil {
			return 0, err
		}
		for _, r := range slices.Backward(recs) {
			if r.Host == host {
				return r.TOId, nil
			}
		}
		hi = lo - 1
	}
	return 0, nil
}
