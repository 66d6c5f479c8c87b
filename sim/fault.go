package sim

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/meridian-kv/meridian/protocol"
	"github.com/meridian-kv/meridian/topology"
)

// FaultKind names a scheduled fault.
type FaultKind uint8

const (
	// Outage freezes datacenter DC (see the package comment).
	Outage FaultKind = iota + 1
	// Partition drops every message between DC and Peer, both ways.
	Partition
	// Slow adds ExtraUs to the one-way delay between DC and Peer, both ways.
	Slow
	// NodeCrash freezes node Node alone, as an Outage freezes a datacenter (see the package
	// comment): for a partitioned store, one partition server fails.
	NodeCrash
	// NodeCut drops every message between nodes Node and PeerNode, both ways; the other links
	// of both, and their clients' requests and replies, are untouched.
	NodeCut
)

// Fault is one scheduled fault, active in virtual time [StartUs, EndUs). A datacenter fault
// names datacenters (DC, Peer), a node fault names nodes by id (Node, PeerNode).
type Fault struct {
	Kind     FaultKind
	DC       string
	Peer     string          // Partition, Slow
	Node     protocol.NodeID // NodeCrash, NodeCut
	PeerNode protocol.NodeID // NodeCut
	StartUs  int64
	EndUs    int64
	ExtraUs  int64 // Slow
}

// String renders f in the syntax ParseFault reads.
func (f Fault) String() string {
	span := fmt.Sprintf("@%s-%s", time.Duration(f.StartUs)*time.Microsecond, time.Duration(f.EndUs)*time.Microsecond)
	switch f.Kind {
	case Outage:
		return "crash:" + f.DC + span
	case Partition:
		return "partition:" + f.pair() + span
	case Slow:
		return fmt.Sprintf("slow:%s+%s%s", f.pair(), time.Duration(f.ExtraUs)*time.Microsecond, span)
	case NodeCrash:
		return fmt.Sprintf("crash-node:%d%s", f.Node, span)
	case NodeCut:
		return fmt.Sprintf("cut-nodes:%d-%d%s", f.Node, f.PeerNode, span)
	}
	return "unknown-fault"
}

// pair renders the two datacenters as "A-B", or "A,B" when a name contains '-'.
func (f Fault) pair() string {
	if strings.Contains(f.DC+f.Peer, "-") {
		return f.DC + "," + f.Peer
	}
	return f.DC + "-" + f.Peer
}

// ParseFault reads one fault: "crash:DC@START-END", "partition:DC1-DC2@START-END",
// "slow:DC1-DC2+EXTRA@START-END", "crash-node:N@START-END" or "cut-nodes:N1-N2@START-END", with
// Go durations and node ids (e.g. "crash:V@10s-20s", "slow:V-O+100ms@5s-6s",
// "crash-node:3@1s-2s", "cut-nodes:2-5@1s-3s"). Datacenter names that contain '-' are separated
// by ',' instead ("partition:us-east,eu-west@1s-2s"). Whether the datacenters and nodes exist is
// checked when the simulator is built.
func ParseFault(spec string) (Fault, error) {
	bad := func(why string) (Fault, error) {
		return Fault{}, fmt.Errorf("fault %q: %s (want crash:DC@START-END, partition:A-B@START-END, slow:A-B+DELAY@START-END, "+
			"crash-node:N@START-END or cut-nodes:N1-N2@START-END)", spec, why)
	}
	kind, rest, ok := strings.Cut(spec, ":")
	if !ok {
		return bad("missing kind")
	}
	what, span, ok := strings.Cut(rest, "@")
	if !ok {
		return bad("missing @START-END")
	}
	startS, endS, ok := strings.Cut(span, "-")
	if !ok {
		return bad("missing -END")
	}
	start, err1 := time.ParseDuration(startS)
	end, err2 := time.ParseDuration(endS)
	if err1 != nil || err2 != nil || start < 0 || end <= start {
		return bad("START and END must be durations with 0 ≤ START < END")
	}
	f := Fault{StartUs: start.Microseconds(), EndUs: end.Microseconds()}
	switch kind {
	case "crash":
		if what == "" {
			return bad("needs a datacenter")
		}
		f.Kind, f.DC = Outage, what
	case "partition", "slow":
		f.Kind = Partition
		if kind == "slow" {
			f.Kind = Slow
			var extra string
			what, extra, ok = strings.Cut(what, "+")
			d, err := time.ParseDuration(extra)
			if !ok || err != nil || d <= 0 {
				return bad("slow needs +DELAY, a positive duration")
			}
			f.ExtraUs = d.Microseconds()
		}
		sep := "-"
		if strings.Contains(what, ",") {
			sep = ","
		}
		if f.DC, f.Peer, ok = strings.Cut(what, sep); !ok || f.DC == "" || f.Peer == "" {
			return bad("needs two datacenters A-B (or A,B when a name contains '-')")
		}
	case "crash-node":
		n, ok := parseNode(what)
		if !ok {
			return bad("crash-node needs a node id, a non-negative integer")
		}
		f.Kind, f.Node = NodeCrash, n
	case "cut-nodes":
		a, b, _ := strings.Cut(what, "-")
		n1, ok1 := parseNode(a)
		n2, ok2 := parseNode(b)
		if !ok1 || !ok2 || n1 == n2 {
			return bad("cut-nodes needs two different node ids N1-N2, non-negative integers")
		}
		f.Kind, f.Node, f.PeerNode = NodeCut, n1, n2
	default:
		return bad("unknown kind " + kind)
	}
	return f, nil
}

// parseNode reads a node id: a non-negative decimal integer.
func parseNode(s string) (protocol.NodeID, bool) {
	n, err := strconv.ParseInt(s, 10, 32)
	return protocol.NodeID(n), err == nil && n >= 0 && !strings.HasPrefix(s, "+")
}

// resolve checks f's datacenters against topo and returns their indices.
func (f Fault) resolve(topo *topology.Topology) (a, b int, err error) {
	a, ok := topo.Index(f.DC)
	if !ok {
		return 0, 0, fmt.Errorf("fault %s: unknown datacenter %q", f, f.DC)
	}
	if f.Kind == Outage {
		return a, a, nil
	}
	b, ok = topo.Index(f.Peer)
	if !ok || a == b {
		return 0, 0, fmt.Errorf("fault %s: peer %q must be another datacenter of topology %s", f, f.Peer, topo.Name)
	}
	return a, b, nil
}

// resolveNodes checks f's nodes against the run's nodes.
func (f Fault) resolveNodes(nodes int) error {
	named := []protocol.NodeID{f.Node}
	if f.Kind == NodeCut {
		named = append(named, f.PeerNode)
	}
	for _, n := range named {
		if n < 0 || int(n) >= nodes {
			return fmt.Errorf("fault %s: node %d does not exist (the run has nodes 0 to %d)", f, n, nodes-1)
		}
	}
	if f.Kind == NodeCut && f.Node == f.PeerNode {
		return fmt.Errorf("fault %s: a cut needs two different nodes", f)
	}
	return nil
}

// schedule validates f and queues its start and end.
func (s *Sim) schedule(f Fault) error {
	var a, b int
	var err error
	if f.Kind == NodeCrash || f.Kind == NodeCut {
		err = f.resolveNodes(len(s.cfg.Nodes))
		s.nodeFaults = true
	} else {
		a, b, err = f.resolve(s.cfg.Topology)
	}
	if err != nil {
		return err
	}
	if f.StartUs < 0 || f.EndUs <= f.StartUs {
		return fmt.Errorf("fault %s: needs 0 ≤ start < end", f)
	}
	var begin, end func()
	switch f.Kind {
	case Outage:
		begin = func() { s.down[a] = true }
		end = func() { s.down[a] = false; s.resume() }
	case Partition:
		begin = func() { s.cutLinks[a][b]++; s.cutLinks[b][a]++ }
		end = func() { s.cutLinks[a][b]--; s.cutLinks[b][a]-- }
	case Slow:
		begin = func() { s.extraDelay[a][b] += f.ExtraUs; s.extraDelay[b][a] += f.ExtraUs }
		end = func() { s.extraDelay[a][b] -= f.ExtraUs; s.extraDelay[b][a] -= f.ExtraUs }
	case NodeCrash:
		begin = func() { s.nodeDown[f.Node]++ }
		end = func() { s.nodeDown[f.Node]--; s.resume() }
	case NodeCut:
		pair := [2]protocol.NodeID{min(f.Node, f.PeerNode), max(f.Node, f.PeerNode)}
		begin = func() { s.cutNodes = append(s.cutNodes, pair) }
		end = func() {
			i := slices.Index(s.cutNodes, pair)
			s.cutNodes = slices.Delete(s.cutNodes, i, i+1)
		}
	default:
		return fmt.Errorf("fault %s: unknown kind", f)
	}
	s.push(&event{at: f.StartUs, kind: evCall, dc: -1, fn: begin})
	s.push(&event{at: f.EndUs, kind: evCall, dc: -1, fn: end})
	return nil
}

// resume requeues, in their original order, the deferred events of datacenters and nodes that
// are back.
func (s *Sim) resume() {
	waiting := s.deferred[:0]
	var ready []*event
	for _, e := range s.deferred {
		if s.frozen(e) {
			waiting = append(waiting, e)
		} else {
			ready = append(ready, e)
		}
	}
	s.deferred = waiting
	for _, e := range ready {
		e.at = s.nowUs
		s.push(e)
	}
}
