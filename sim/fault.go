package sim

import (
	"fmt"
	"strings"
	"time"

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
)

// Fault is one scheduled fault, active in virtual time [StartUs, EndUs).
type Fault struct {
	Kind    FaultKind
	DC      string
	Peer    string // Partition, Slow
	StartUs int64
	EndUs   int64
	ExtraUs int64 // Slow
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

// ParseFault reads one fault: "crash:DC@START-END", "partition:DC1-DC2@START-END" or
// "slow:DC1-DC2+EXTRA@START-END", with Go durations (e.g. "crash:V@10s-20s",
// "slow:V-O+100ms@5s-6s"). Datacenter names that contain '-' are separated by ',' instead
// ("partition:us-east,eu-west@1s-2s").
func ParseFault(spec string) (Fault, error) {
	bad := func(why string) (Fault, error) {
		return Fault{}, fmt.Errorf("fault %q: %s (want crash:DC@START-END, partition:A-B@START-END or slow:A-B+DELAY@START-END)", spec, why)
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
	default:
		return bad("unknown kind " + kind)
	}
	return f, nil
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

// schedule validates f and queues its start and end.
func (s *Sim) schedule(f Fault) error {
	a, b, err := f.resolve(s.cfg.Topology)
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
	default:
		return fmt.Errorf("fault %s: unknown kind", f)
	}
	s.push(&event{at: f.StartUs, kind: evCall, dc: -1, fn: begin})
	s.push(&event{at: f.EndUs, kind: evCall, dc: -1, fn: end})
	return nil
}

// resume requeues, in their original order, the deferred events of datacenters that are back.
func (s *Sim) resume() {
	waiting := s.deferred[:0]
	var ready []*event
	for _, e := range s.deferred {
		if s.down[e.dc] {
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
