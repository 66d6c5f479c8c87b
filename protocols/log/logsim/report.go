package logsim

import (
	"bufio"
	"encoding/json"
	"io"
	"sort"

	"github.com/meridian-kv/meridian/protocols/log/chariots"
	"github.com/meridian-kv/meridian/sim"
)

// HistoryLine is one record of one datacenter's log in the history file (JSON Lines, one
// record per line, in datacenter then position order): where it is (DC, LId), what it is
// (Host, TOId), what it follows (Deps) and which append made it (Client, Append).
type HistoryLine struct {
	DC     int      `json:"dc"`
	LId    uint64   `json:"lid"`
	Host   int      `json:"host"`
	TOId   uint64   `json:"toid"`
	Deps   []uint64 `json:"deps"`
	Client uint32   `json:"client"`
	Append uint64   `json:"append"`
}

// WriteHistory writes every datacenter's log of s, so that its order can be checked
// independently (per-host order, causality, exactly once).
func WriteHistory(w io.Writer, s chariots.Snapshot) error {
	bw := bufio.NewWriter(w)
	enc := json.NewEncoder(bw)
	for dc, log := range s.Logs {
		lids := make([]uint64, 0, len(log))
		for l := range log {
			lids = append(lids, l)
		}
		sort.Slice(lids, func(i, j int) bool { return lids[i] < lids[j] })
		for _, l := range lids {
			r := log[l]
			if err := enc.Encode(HistoryLine{DC: dc, LId: l, Host: r.Host, TOId: r.TOId, Deps: r.Deps, Client: uint32(r.Client), Append: r.AppendSeq}); err != nil {
				return err
			}
		}
	}
	return bw.Flush()
}

// Report is a log bench run's results, the JSON of `meridian bench --workload log`.
type Report struct {
	Options       string        `json:"options"`
	DCs           []string      `json:"dcs"`
	DurationUs    int64         `json:"duration_us"`
	Appends       int           `json:"appends"`
	AppendsPerSec float64       `json:"appends_per_sec"`
	Retries       int           `json:"retries"`
	LatencyMsP50  float64       `json:"latency_ms_p50"`
	LatencyMsP99  float64       `json:"latency_ms_p99"`
	LatencyMsMean float64       `json:"latency_ms_mean"`
	RecordsPerDC  []int         `json:"records_per_dc"`
	SampleEveryUs int64         `json:"sample_every_us"`
	Stages        []StageSeries `json:"stages"`
	Sim           sim.Stats     `json:"sim"`
}

// NewReport summarizes run o's result res.
func NewReport(o Options, res Result) Report {
	rep := Report{Options: o.String(), DCs: o.Topology.DCs, DurationUs: o.DurationUs, Appends: res.Appends, Retries: res.Retries,
		RecordsPerDC: res.Records, SampleEveryUs: o.SampleEveryUs, Stages: res.Stages, Sim: res.Sim}
	if o.DurationUs > 0 {
		rep.AppendsPerSec = float64(res.Appends) * 1e6 / float64(o.DurationUs)
	}
	if n := len(res.LatencyUs); n > 0 {
		lat := append([]int64(nil), res.LatencyUs...)
		sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
		sum := int64(0)
		for _, v := range lat {
			sum += v
		}
		rep.LatencyMsP50 = float64(lat[n/2]) / 1000
		rep.LatencyMsP99 = float64(lat[min(n-1, n*99/100)]) / 1000
		rep.LatencyMsMean = float64(sum) / float64(n) / 1000
	}
	return rep
}
