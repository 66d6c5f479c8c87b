package sdur

import (
	"slices"

	"github.com/meridian-kv/meridian/protocol"
)

// snapshotTick starts a snapshot every snapshotInterval at the leader of partition 0 (spec §3.6,
// reconcile-only), and asks again if a round has not finished within the interval (lost
// messages, a crashed server).
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
	var l []GlobalCommit
	for _, g := range r.globals {
		if g.SC > m.Prev[r.part] {
			l = append(l, g)
		}
	}
	rep := &Report{M: m.M, Part: r.part, C: r.sc, L: l}
	if from == r.self {
		r.onReport(rep)
		return
	}
	r.env.Send(from, rep)
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
