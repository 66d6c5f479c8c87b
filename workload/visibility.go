package workload

import (
	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"

	"github.com/meridian-kv/meridian/protocol"
	"github.com/meridian-kv/meridian/protocol/txn"
	"github.com/meridian-kv/meridian/protocols/tcc"
)

// visibilityJoinTTLUs is how long a WOT's per-partition visibility events wait for those of its
// other participants (a crashed partition may never report) before the WOT is left out of
// WOTVisibilityLag.
const visibilityJoinTTLUs = 60_000_000

// visibility collects the visibility lags of a run from the replicas that implement
// tcc.VisibilityReporter, draining them every virtual second: per-partition lags, and per-WOT
// lags joined from its participants' events by transaction id.
type visibility struct {
	window      [2]int64 // the measurement window [start, end)
	part, wot   *hdrhistogram.Histogram
	joins       map[txn.ID]*visJoin
	buf         []tcc.Visibility
	reporters   bool
	measured    int
	dropped     int
	lastSweepUs int64
}

// visJoin is a WOT whose participants have not all reported yet.
type visJoin struct {
	firstUs       int64 // the first event's VisibleUs
	seen          int
	lastVisibleUs int64
	participants  int // from the coordinator's event (0 until it arrives)
	decidedUs     int64
}

// newVisibility measures the WOTs committed (per partition) or decided (per WOT) in
// [startUs, endUs).
func newVisibility(startUs, endUs int64) *visibility {
	return &visibility{window: [2]int64{startUs, endUs}, part: hdrhistogram.New(1, 3_600_000_000, 3), wot: hdrhistogram.New(1, 3_600_000_000, 3),
		joins: map[txn.ID]*visJoin{}}
}

// drain takes every reporting replica's events (replicas are in node order; now is the run's
// time) and forgets the WOTs whose
// participants did not all report within visibilityJoinTTLUs.
func (v *visibility) drain(replicas []protocol.Replica, now int64) {
	for _, replica := range replicas {
		rep, ok := protocol.Innermost(replica).(tcc.VisibilityReporter)
		if !ok {
			continue
		}
		v.reporters = true
		var dropped int
		v.buf, dropped = rep.DrainVisibility(v.buf[:0])
		v.dropped += dropped
		for _, ev := range v.buf {
			v.add(ev)
		}
	}
	clear(v.buf)
	if now-v.lastSweepUs >= visibilityJoinTTLUs {
		v.lastSweepUs = now
		for id, j := range v.joins {
			if now-j.firstUs > visibilityJoinTTLUs {
				delete(v.joins, id)
			}
		}
	}
}

func (v *visibility) inWindow(us int64) bool { return us >= v.window[0] && us < v.window[1] }

// add records one partition's event, and the WOT's lag once every participant reported.
func (v *visibility) add(ev tcc.Visibility) {
	if v.inWindow(ev.CommitUs) {
		v.measured++
		_ = v.part.RecordValue(max(ev.LagUs(), 0))
	}
	j := v.joins[ev.Tx]
	if j == nil {
		j = &visJoin{firstUs: ev.VisibleUs}
		v.joins[ev.Tx] = j
	}
	j.seen++
	j.lastVisibleUs = max(j.lastVisibleUs, ev.VisibleUs)
	if ev.Participants > 0 {
		j.participants, j.decidedUs = ev.Participants, ev.DecidedUs
	}
	if j.participants > 0 && j.seen >= j.participants {
		if v.inWindow(j.decidedUs) {
			_ = v.wot.RecordValue(max(j.lastVisibleUs-j.decidedUs, 0))
		}
		delete(v.joins, ev.Tx)
	}
}

// summarise puts the lags into m.
func (v *visibility) summarise(m *TCCMetrics) {
	if !v.reporters {
		return
	}
	m.VisibilityLag, m.WOTVisibilityLag = latencyOf(v.part), latencyOf(v.wot)
	m.VisibilityMeasured, m.VisibilityDropped = v.measured, v.dropped
}
