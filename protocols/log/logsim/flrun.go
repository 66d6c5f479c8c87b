package logsim

import (
	"fmt"

	"github.com/meridian-kv/meridian/protocol"
	"github.com/meridian-kv/meridian/protocol/txn"
	"github.com/meridian-kv/meridian/protocols/log/flstore"
	"github.com/meridian-kv/meridian/sim"
	"github.com/meridian-kv/meridian/topology"
)

// FLOptions describe a standalone FLStore throughput run (the source's Fig. 7.8 and 7.9): one
// datacenter of Maintainers log maintainers and as many client machines, machine i appending
// records of BodyBytes open loop at RatePerSec to maintainer i, for DurationUs.
type FLOptions struct {
	Maintainers int
	RatePerSec  float64
	BodyBytes   int
	DurationUs  int64
	// SampleEveryUs is the period of the per-maintainer series.
	SampleEveryUs int64
	// SettleUs bounds the wait for every append's answer after DurationUs.
	SettleUs int64
	Capacity *Capacity
	Seed     uint64
}

// FLResult is what a standalone run did: appends answered, and each maintainer's records
// persisted per sampling period.
type FLResult struct {
	Appends     int
	EndUs       int64
	Maintainers []StageSeries
	Sim         sim.Stats
}

// RunFLStore runs o and checks that every append was answered once, at a position holding it.
func RunFLStore(o FLOptions) (FLResult, error) {
	params := protocol.Params{"maintainers": fmt.Sprint(o.Maintainers), "indexers": "1", "noop_after": "0"}
	l, err := flstore.LayoutFromParams(1, flstore.Roles, params, nil)
	if err != nil {
		return FLResult{}, err
	}
	topo := &topology.Topology{Name: "one", DCs: []string{"X"}, RTTMs: [][]float64{{0}}, StdDevMs: [][]float64{{0}}}
	cfg := sim.Config{Topology: topo, Nodes: l.Nodes, Factory: flstore.Factory, Params: params, Seed: o.Seed,
		ClientHopUs: sim.DefaultClientHopUs, IntraDCUs: 250}
	if o.Capacity != nil {
		cfg.LAN = o.Capacity.apply(&cfg.Service, l.Role, true)
	}
	s, err := sim.New(cfg)
	if err != nil {
		return FLResult{}, err
	}
	ms := l.Active(0, flstore.Maintainer)
	type answer struct{ client, lid, seq uint64 }
	var answers []answer
	open := 0
	var res FLResult
	var fail error
	body := make([]byte, o.BodyBytes)
	for i, m := range ms {
		id := txn.ClientID(i + 1)
		c, err := s.Connect(id, m)
		if err != nil {
			return FLResult{}, err
		}
		openLoop(c, m, o.RatePerSec, o.DurationUs, body, func(uint64, int64) { open++ }, func(seq uint64, _ int64, rep protocol.Reply) {
			r, ok := rep.Op.(*flstore.AppendResult)
			if rep.Err != "" || !ok {
				fail = fmt.Errorf("client machine %d's append %d: %q", id, seq, rep.Err)
				return
			}
			open--
			answers = append(answers, answer{uint64(id), r.LId, seq})
		})
	}
	last := make([]uint64, len(ms))
	for _, m := range ms {
		res.Maintainers = append(res.Maintainers, StageSeries{Role: flstore.Maintainer.String(), Node: m})
	}
	var sample func()
	sample = func() {
		for i, m := range ms {
			n := s.Replica(m).(flstore.Counted).Handled()
			res.Maintainers[i].Records = append(res.Maintainers[i].Records, n-last[i])
			last[i] = n
		}
		if s.NowUs()+o.SampleEveryUs <= o.DurationUs {
			s.After(-1, o.SampleEveryUs, sample)
		}
	}
	s.After(-1, o.SampleEveryUs, sample)
	for t := o.DurationUs; open > 0 || t == o.DurationUs; t += 10_000 {
		if t > o.DurationUs+o.SettleUs {
			return res, fmt.Errorf("flstore: %d appends unanswered %d µs after the run", open, o.SettleUs)
		}
		s.RunUntil(t)
		if fail != nil {
			return res, fail
		}
	}
	// Every answer names a position that holds its append, and no position two.
	filled := map[uint64]*flstore.Record{}
	for _, m := range ms {
		for lid, r := range s.Replica(m).(*flstore.LogMaintainer).State().Filled {
			if filled[lid] != nil {
				return res, fmt.Errorf("flstore: position %d held twice", lid)
			}
			filled[lid] = r
		}
	}
	seen := map[uint64]bool{}
	for _, a := range answers {
		r := filled[a.lid]
		if r == nil || uint64(r.Client) != a.client || r.AppendSeq != a.seq || seen[a.lid] {
			return res, fmt.Errorf("flstore: client machine %d's append %d answered with position %d, which holds %+v", a.client, a.seq, a.lid, r)
		}
		seen[a.lid] = true
	}
	res.Appends, res.EndUs, res.Sim = len(answers), s.NowUs(), s.Stats()
	return res, nil
}
