package sdur

import (
	"slices"

	"github.com/meridian-kv/meridian/protocol"
)

// snapshotTick starts a snapshot every snapshotInterval at the leader of partition 0 (spec §3.6),
// and asks again if a round has not finished within the interval (lost messages, a crashed
// server): with markers (the default) by sending its MARKER, else (reconcile-only) by asking a
// server of every partition for its report.
func (r *Replica) snapshotTick(now int64) {
	if r.part != 0 || !r.ab.leading || r.cfg.snapshotUs <= 0 {
		return
	}
	if r.round == nil && now-r.lastSnap < r.cfg.snapshotUs {
		return
	}
	if r.round == nil || r.round.m != r.snapM+1 {
		r.round = &snapRound{m: r.snapM + 1, prev: slices.Clone(r.snapS), reports: map[int]*Report{}}
	} else if now-r.round.startUs < r.cfg.snapshotUs {
		return
	}
	r.round.startUs, r.lastSnap = now, now
	if r.cfg.markers {
		r.onMarker(r.self, &Marker{M: r.round.m, Part: 0, Coord: r.self, Prev: r.round.prev})
		return
	}
	ask := &SnapAsk{M: r.round.m, Prev: r.round.prev}
	r.sendAllOf(allParts(r.pl.Partitions()), ask)
	r.onSnapAsk(r.self, ask)
}

// onSnapAsk answers with this partition's SC and the globals it committed since the previous
// snapshot (REPORT). A replica that has not reached the previous snapshot stays silent: another
// replica of its partition answers.
func (r *Replica) onSnapAsk(from protocol.NodeID, m *SnapAsk) {
	if len(m.Prev) != r.pl.Partitions() || r.sc < m.Prev[r.part] {
		return
	}
	r.sendReport(from, r.report(m.M, m.Prev))
}

// report is this partition's REPORT for round m: its SC and the globals it committed after prev.
func (r *Replica) report(m uint64, prev []uint64) *Report {
	var l []GlobalCommit
	for _, g := range r.globals {
		if g.SC > prev[r.part] {
			l = append(l, g)
		}
	}
	return &Report{M: m, Part: r.part, C: r.sc, L: l}
}

func (r *Replica) sendReport(to protocol.NodeID, rep *Report) {
	if to == r.self {
		r.onReport(rep)
		return
	}
	r.env.Send(to, rep)
}

// snapHold is a replica's part in the marker protocol (spec §3.6, marker+reconcile).
type snapHold struct {
	mark *markRound // the latest round whose markers this replica has seen
	// holdM is the round whose SNAPBEGIN was delivered and whose SNAPRESUME was not (0: none):
	// the globals delivered meanwhile wait in heldGlobals, in delivery order. beganM and
	// resumedM are the latest SNAPBEGIN and SNAPRESUME delivered; holdUs is when the hold began.
	holdM, beganM, resumedM uint64
	holdUs                  int64
	heldGlobals             []*Terminate
}

// markRound is one snapshot round as a replica sees it: the partitions whose markers arrived,
// whether this replica (as its partition's leader) joined it and what it reported.
type markRound struct {
	m      uint64
	coord  protocol.NodeID
	prev   []uint64
	got    map[int]bool
	joined bool
	report *Report
}

// onMarker records partition m.Part's marker for round m.M. A leader joins a round at the first
// marker it sees: it broadcasts SNAPBEGIN in its partition (which starts the hold) and sends its
// own marker to every server; once it holds every partition's marker it takes its SC as c_q,
// broadcasts SNAPRESUME and reports to the coordinator. The coordinator's marker arriving again
// (a round it retries) makes a leader send its marker and report again.
func (r *Replica) onMarker(from protocol.NodeID, m *Marker) {
	n := r.pl.Partitions()
	if len(m.Prev) != n || m.Part < 0 || m.Part >= n || int(m.Coord) < 0 || int(m.Coord) >= len(r.pl.DC) || m.M <= r.snapM {
		return
	}
	mr := r.mark
	if mr == nil || m.M > mr.m {
		mr = &markRound{m: m.M, coord: m.Coord, prev: m.Prev, got: map[int]bool{}}
		r.mark = mr
	}
	if m.M != mr.m {
		return
	}
	mr.got[m.Part] = true
	if !r.ab.leading {
		return
	}
	retry := mr.joined && m.Part == 0 && from == m.Coord
	if !mr.joined {
		mr.joined, mr.got[r.part] = true, true
		r.ab.submit(&SnapBegin{M: mr.m})
		retry = true // my marker goes out on joining as on every retry
	}
	if retry {
		r.sendAllOf(allParts(n), &Marker{M: mr.m, Part: r.part, Coord: mr.coord, Prev: mr.prev})
	}
	switch {
	case mr.report == nil && len(mr.got) == n && r.sc >= mr.prev[r.part]:
		mr.report = r.report(mr.m, mr.prev)
		r.ab.submit(&SnapResume{M: mr.m})
		r.sendReport(mr.coord, mr.report)
	case mr.report != nil && retry:
		r.sendReport(mr.coord, mr.report) // a retried round: the report may have been lost
	}
}

// onReport collects the first REPORT of every partition; with all of them the coordinator
// orders the cut in partition 0's broadcast.
func (r *Replica) onReport(m *Report) {
	rd := r.round
	if rd == nil || m.M != rd.m || m.Part < 0 || m.Part >= r.pl.Partitions() || rd.reports[m.Part] != nil {
		return
	}
	rd.reports[m.Part] = m
	if len(rd.reports) < r.pl.Partitions() {
		return
	}
	c := make([]uint64, r.pl.Partitions())
	l := make([][]GlobalCommit, len(c))
	for q := range c {
		c[q], l[q] = rd.reports[q].C, rd.reports[q].L
	}
	s := c
	if !r.cfg.noReconcile {
		s = GreatestConsistentCut(c, l)
	}
	r.ab.submit(&SnapDecided{M: rd.m, S: s})
}

// GreatestConsistentCut is the spec's reconciliation (§3.6): starting from c, it lowers S_i
// below every global T committed at i within S_i that some other partition j of T has not
// committed within S_j (T not in l[j], or T[j] > S_j), until no such T is left. l[i] lists the
// globals partition i committed after the previous snapshot, up to c[i]; the previous snapshot
// is consistent, so the result stays at or above it.
func GreatestConsistentCut(c []uint64, l [][]GlobalCommit) []uint64 {
	s := slices.Clone(c)
	at := make([]map[uint64]uint64, len(c)) // at[j][tx] = T[j]
	for j, lj := range l {
		at[j] = make(map[uint64]uint64, len(lj))
		for _, g := range lj {
			at[j][uint64(g.Tx)] = g.SC
		}
	}
	for changed := true; changed; {
		changed = false
		for i, li := range l {
			for _, g := range li {
				if g.SC > s[i] {
					continue
				}
				for _, j := range g.Parts {
					if j < 0 || j >= len(s) {
						continue
					}
					if tj, ok := at[j][uint64(g.Tx)]; !ok || tj > s[j] {
						s[i], changed = g.SC-1, true
						break
					}
				}
			}
		}
	}
	return s
}

// pruneGlobals forgets the committed globals the published snapshot already covers.
func (r *Replica) pruneGlobals() {
	keep := r.globals[:0]
	for _, g := range r.globals {
		if g.SC > r.snapS[r.part] {
			keep = append(keep, g)
		}
	}
	clear(r.globals[len(keep):])
	r.globals = keep
}

// onSnapBegin starts holding globals (a SNAPBEGIN of a round neither begun nor resumed).
func (r *Replica) onSnapBegin(p *SnapBegin) {
	if p.M > r.beganM && p.M > r.resumedM {
		r.beganM, r.holdM, r.holdUs = p.M, p.M, r.env.NowUs()
	}
}

// onSnapResume ends the hold of its round or an earlier one: the held globals are certified in
// the order they were delivered, each counting as delivered now (DC, THRESHOLD).
func (r *Replica) onSnapResume(p *SnapResume) {
	if p.M <= r.resumedM {
		return
	}
	r.resumedM = p.M
	if r.holdM == 0 || r.holdM > p.M {
		return
	}
	r.holdM = 0
	held := r.heldGlobals
	r.heldGlobals = nil
	for _, t := range held {
		r.terminate(t, r.seen[t.Tx])
	}
}

// holdTick ends a hold that has lasted election_timeout: the leader broadcasts SNAPRESUME
// itself, so a lost marker or a leader that crashed mid-round does not hold globals forever.
func (r *Replica) holdTick(now int64) {
	if r.holdM != 0 && r.ab.leading && now-r.holdUs >= r.cfg.electionUs {
		r.holdUs = now
		r.ab.submit(&SnapResume{M: r.holdM})
	}
}
