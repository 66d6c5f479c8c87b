package rlog

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"sort"
	"strings"
	"testing"
)

// recKey names a record globally: (host, ts) is unique.
type recKey struct {
	host int
	ts   int64
}

// inflight is a message on the simulated network.
type inflight struct {
	to int
	at int64
	m  *Message[int]
	// baseHave is what the sender held (records per host) at its previous message to the
	// receiver: an incremental message is accepted exactly when the receiver holds as much.
	baseHave []int
}

// world drives n logs over a lossy, reordering, duplicating network and checks every invariant
// of the package against a global oracle after each step.
type world struct {
	t    *testing.T
	rng  *rand.Rand
	n    int
	logs []*Log[int]

	// Oracle.
	hostTS   [][]int64         // hostTS[k]: timestamps of every record k created, in creation order
	payload  map[recKey]int    // payload of every record ever created
	have     [][]int           // have[i][k]: how many k-records site i has incorporated (a prefix of hostTS[k])
	seen     []map[recKey]bool // records incorporated at site i (local appends + incorporate callbacks)
	lastTS   []int64           // highest timestamp site i has assigned (records and heartbeats)
	assigned []map[int64][]int // assigned[k][τ]: copy of have[k] at the moment k assigned timestamp τ
	prev     [][]int64         // each site's table after the previous check (monotonicity)
	gcdHost  [][]int           // gcdHost[i][k]: k-records dropped by GC at site i
	heldAt   [][][]int         // heldAt[k][x]: copy of have[k] when k created its record #x
	nextPay  int

	// Knobs.
	now          int64
	physical     bool    // pass a skewed physical clock to Append/Broadcast (Helios) instead of 0 (MF)
	offset       []int64 // per-site clock offset in physical mode
	lossP, dupP  float64
	maxDelay     int64
	appendInRecv float64 // probability that incorporate itself appends a local record
	net          []inflight

	// Per directed link [from][to]: the messages sent so far, what the sender held at the last
	// one, whether the sender owes a full message (fullNext) and whether it must ask the
	// receiver for one (wantFull, after a rejection).
	sentSeq            [][]uint64
	sentHave           [][][]int
	fullNext, wantFull [][]bool
	rejected           int    // incremental messages rejected after a gap
	dirty              []bool // site i's log changed since the last check
}

func newWorld(t *testing.T, seed uint64, n int) *world {
	rng := rand.New(rand.NewPCG(seed, uint64(n)))
	w := &world{
		t: t, rng: rng, n: n,
		payload:      map[recKey]int{},
		hostTS:       make([][]int64, n),
		physical:     rng.IntN(2) == 0,
		lossP:        0.05 + 0.15*rng.Float64(),
		dupP:         0.2 * rng.Float64(),
		maxDelay:     1 + rng.Int64N(40),
		appendInRecv: 0.15 * rng.Float64(),
	}
	for i := range n {
		w.logs = append(w.logs, New[int](i, n))
		w.have = append(w.have, make([]int, n))
		w.seen = append(w.seen, map[recKey]bool{})
		w.lastTS = append(w.lastTS, 0)
		w.assigned = append(w.assigned, map[int64][]int{})
		w.prev = append(w.prev, make([]int64, n*n))
		w.gcdHost = append(w.gcdHost, make([]int, n))
		w.heldAt = append(w.heldAt, nil)
		w.offset = append(w.offset, rng.Int64N(101)-50)
		w.dirty = append(w.dirty, true)
		w.sentSeq = append(w.sentSeq, make([]uint64, n))
		w.fullNext = append(w.fullNext, make([]bool, n))
		w.wantFull = append(w.wantFull, make([]bool, n))
		w.sentHave = append(w.sentHave, make([][]int, n))
		for range n {
			w.sentHave[i] = append(w.sentHave[i], make([]int, n))
		}
	}
	return w
}

func (w *world) fatalf(format string, args ...any) {
	w.t.Helper()
	w.t.Fatalf("n=%d now=%d: "+format, append([]any{w.n, w.now}, args...)...)
}

func (w *world) nowTS(i int) int64 {
	if !w.physical {
		return 0
	}
	return max(0, w.now+w.offset[i])
}

// noteTimestamp checks a freshly assigned timestamp of site i and snapshots what i holds then.
func (w *world) noteTimestamp(i int, ts, nowTS int64) {
	if ts <= w.lastTS[i] {
		w.fatalf("site %d assigned timestamp %d, not above its previous %d", i, ts, w.lastTS[i])
	}
	if ts < nowTS {
		w.fatalf("site %d assigned timestamp %d below the clock reading %d", i, ts, nowTS)
	}
	if got := w.logs[i].Last(); got != ts {
		w.fatalf("site %d: Last() = %d after assigning %d", i, got, ts)
	}
	if got := w.logs[i].T(i, i); got != ts {
		w.fatalf("site %d: T[i][i] = %d after assigning %d", i, got, ts)
	}
	w.lastTS[i] = ts
	w.assigned[i][ts] = slices.Clone(w.have[i])
}

func (w *world) appendAt(i int) Record[int] {
	w.nextPay++
	p := w.nextPay
	nowTS := w.nowTS(i)
	r := w.logs[i].Append(nowTS, p)
	if r.Host != i || r.Payload != p {
		w.fatalf("site %d: Append returned %+v", i, r)
	}
	recs := w.logs[i].Records()
	if len(recs) == 0 || recs[len(recs)-1] != r {
		w.fatalf("site %d: appended record %+v is not last in the log", i, r)
	}
	w.dirty[i] = true
	w.hostTS[i] = append(w.hostTS[i], r.TS)
	w.payload[recKey{i, r.TS}] = p
	w.have[i][i]++
	w.seen[i][recKey{i, r.TS}] = true
	w.noteTimestamp(i, r.TS, nowTS)
	w.heldAt[i] = append(w.heldAt[i], w.assigned[i][r.TS])
	return r
}

func (w *world) broadcast(i int, lossy bool) {
	l := w.logs[i]
	nowTS := w.nowTS(i)
	var msgs []*Message[int]
	var tos []int
	sigma := l.Broadcast(nowTS, func(to int, m *Message[int]) {
		tos = append(tos, to)
		msgs = append(msgs, m)
	})
	w.noteTimestamp(i, sigma, nowTS)
	var want []int
	for j := range w.n {
		if j != i {
			want = append(want, j)
		}
	}
	if !slices.Equal(tos, want) {
		w.fatalf("site %d broadcast to %v, want every peer once %v", i, tos, want)
	}
	for x, m := range msgs {
		to := tos[x]
		if m.From != i || m.SendTS != sigma {
			w.fatalf("site %d: message to %d has From %d SendTS %d, want %d and σ=%d", i, to, m.From, m.SendTS, i, sigma)
		}
		for j := range w.n {
			for k := range w.n {
				if m.Table[j*w.n+k] != l.T(j, k) {
					w.fatalf("site %d: message table differs from the log's at [%d][%d]", i, j, k)
				}
			}
		}
		// Every FullEvery-th message on a link, starting with the first, is full, and so is the
		// first after the receiver asked for one; a site asks after it rejected a message.
		w.sentSeq[i][to]++
		seq := w.sentSeq[i][to]
		if wantFull := seq%FullEvery == 1 || w.fullNext[i][to]; m.Full != wantFull || m.NeedFull != w.wantFull[i][to] {
			w.fatalf("site %d: message %d to %d has Full %v NeedFull %v, want %v and %v", i, seq, to, m.Full, m.NeedFull, wantFull, w.wantFull[i][to])
		}
		w.fullNext[i][to], w.wantFull[i][to] = false, false
		// An incremental message's base is the newest record per host at the previous message.
		prev := w.sentHave[i][to]
		if !m.Full {
			for k, c := range prev {
				want := int64(0)
				if c > 0 {
					want = w.hostTS[k][c-1]
				}
				if m.Base[k] != want {
					w.fatalf("site %d: message %d to %d has base %v, want %d for site %d", i, seq, to, m.Base, want, k)
				}
			}
		}
		// The partial log: the held records the receiver is not known to hold, in log order; an
		// incremental message only those the sender did not hold at its previous message.
		var wantRecs []Record[int]
		for _, r := range l.Records() {
			if l.T(to, r.Host) >= r.TS {
				continue
			}
			if idx := sort.Search(len(w.hostTS[r.Host]), func(x int) bool { return w.hostTS[r.Host][x] >= r.TS }); !m.Full && idx < prev[r.Host] {
				continue
			}
			wantRecs = append(wantRecs, r)
		}
		if !slices.Equal(m.Records, wantRecs) {
			w.fatalf("site %d: message %d (full %v) to %d carries %v, want %v", i, seq, m.Full, to, m.Records, wantRecs)
		}
		w.sentHave[i][to] = slices.Clone(w.have[i])
		if lossy && w.rng.Float64() < w.lossP {
			continue
		}
		w.net = append(w.net, inflight{to: to, at: w.now + w.rng.Int64N(w.maxDelay+1), m: m, baseHave: prev})
		if lossy && w.rng.Float64() < w.dupP {
			w.net = append(w.net, inflight{to: to, at: w.now + w.rng.Int64N(2*w.maxDelay+1), m: m, baseHave: prev})
		}
	}
}

// deliver hands f to its receiver and reports whether it was accepted. A full message, or an
// incremental one whose receiver holds everything its sender held at its previous message, must
// be accepted; any other incremental message must be rejected with ErrGap and change nothing but
// the receiver's wish for a full message.
func (w *world) deliver(f inflight, appendsAllowed bool) bool {
	i, m := f.to, f.m
	l := w.logs[i]
	table := slices.Clone(m.Table)
	recs := slices.Clone(m.Records)
	accept := true
	for k, c := range f.baseHave {
		if !m.Full && k != i && w.have[i][k] < c {
			accept = false
		}
	}
	// Receive only appends records and raises entries, so length, clock and table capture any
	// change a rejected message could make.
	var before state
	if !accept {
		before = lightSnapshot(l)
	}
	err := l.Receive(m, func(r Record[int]) {
		k := recKey{r.Host, r.TS}
		switch {
		case !accept:
			w.fatalf("site %d incorporated %+v from a message of site %d that follows a gap", i, r, m.From)
		case r.Host == i:
			w.fatalf("site %d incorporated its own record %+v", i, r)
		case w.seen[i][k]:
			w.fatalf("site %d incorporated record %+v twice", i, r)
		case w.have[i][r.Host] >= len(w.hostTS[r.Host]) || w.hostTS[r.Host][w.have[i][r.Host]] != r.TS:
			w.fatalf("site %d incorporated %+v out of order: it holds %d records of site %d (%v)", i, r, w.have[i][r.Host], r.Host, w.hostTS[r.Host])
		case w.payload[k] != r.Payload:
			w.fatalf("site %d incorporated %+v, payload was %d", i, r, w.payload[k])
		}
		w.seen[i][k] = true
		w.have[i][r.Host]++
		if appendsAllowed && w.rng.Float64() < w.appendInRecv {
			w.appendAt(i) // protocols may append from inside incorporate (Helios does)
		}
	})
	switch {
	case accept && err != nil:
		w.fatalf("site %d rejected a message (full %v) from %d whose base it holds: %v", i, m.Full, m.From, err)
	case !accept && !errors.Is(err, ErrGap):
		w.fatalf("site %d: incremental message from %d after a gap returned %v, want ErrGap", i, m.From, err)
	case !accept && !lightSnapshot(l).equal(before):
		w.fatalf("site %d: rejected message from %d changed state", i, m.From)
	}
	w.fullNext[i][m.From] = w.fullNext[i][m.From] || m.NeedFull
	if !slices.Equal(table, m.Table) || !slices.Equal(recs, m.Records) {
		w.fatalf("site %d: Receive modified the message", i)
	}
	if !accept {
		w.wantFull[i][m.From] = true
		w.rejected++
		return false
	}
	w.dirty[i] = true
	for _, r := range m.Records {
		if !w.seen[i][recKey{r.Host, r.TS}] {
			w.fatalf("site %d: record %+v of a received message is not incorporated", i, r)
		}
	}
	return true
}

// deliverDue delivers, in random order, every in-flight message due by now (all if flush), and
// reports whether every one was accepted.
func (w *world) deliverDue(flush, appendsAllowed bool) bool {
	var due, rest []inflight
	for _, f := range w.net {
		if flush || f.at <= w.now {
			due = append(due, f)
		} else {
			rest = append(rest, f)
		}
	}
	w.net = rest
	w.rng.Shuffle(len(due), func(a, b int) { due[a], due[b] = due[b], due[a] })
	all := true
	for _, f := range due {
		if !w.deliver(f, appendsAllowed) {
			all = false
		}
		w.check()
	}
	return all
}

func (w *world) gc(i int) {
	l := w.logs[i]
	w.dirty[i] = true
	before := slices.Clone(l.Records())
	dropped := l.GC()
	after := l.Records()
	if len(before)-len(after) != dropped {
		w.fatalf("site %d: GC reported %d dropped, log went from %d to %d", i, dropped, len(before), len(after))
	}
	x := 0
	for _, r := range before {
		everyone := true
		for j := range w.n {
			if l.T(j, r.Host) < r.TS {
				everyone = false
			}
		}
		kept := x < len(after) && after[x] == r
		if kept {
			x++
		}
		switch {
		case kept && everyone:
			w.fatalf("site %d: GC kept %+v although every site is known to hold it", i, r)
		case !kept && !everyone:
			w.fatalf("site %d: GC dropped %+v before every site was known to hold it", i, r)
		case !kept:
			w.gcdHost[i][r.Host]++
			for j := range w.n {
				if !w.seen[j][recKey{r.Host, r.TS}] {
					w.fatalf("site %d: GC dropped %+v, which site %d does not hold", i, r, j)
				}
			}
		}
	}
	if x != len(after) {
		w.fatalf("site %d: GC reordered or invented records: %v -> %v", i, before, after)
	}
}

// check verifies every invariant at every site.
func (w *world) check() {
	n := w.n
	for i, l := range w.logs {
		if l.Self() != i || l.Sites() != n {
			w.fatalf("site %d: Self %d Sites %d", i, l.Self(), l.Sites())
		}
		if l.Last() != w.lastTS[i] || l.T(i, i) != w.lastTS[i] {
			w.fatalf("site %d: Last %d T[i][i] %d, want the last assigned timestamp %d", i, l.Last(), l.T(i, i), w.lastTS[i])
		}
		for j := range n {
			for k := range n {
				v, old := l.T(j, k), w.prev[i][j*n+k]
				if v < old {
					w.fatalf("monotonicity: site %d T[%d][%d] decreased from %d to %d", i, j, k, old, v)
				}
				if v == old {
					// Everything below compares v with quantities that only grow, so it still
					// holds if it held when v was last checked.
					continue
				}
				w.prev[i][j*n+k] = v
				if v > l.T(i, k) {
					w.fatalf("dominance: site %d T[%d][%d]=%d > T[%d][%d]=%d", i, j, k, v, i, k, l.T(i, k))
				}
				if v > w.logs[j].T(j, k) {
					w.fatalf("site %d believes T[%d][%d] ≥ %d but site %d only has %d", i, j, k, v, j, w.logs[j].T(j, k))
				}
				if v == 0 {
					continue
				}
				held, ok := w.assigned[k][v]
				if !ok {
					w.fatalf("site %d: T[%d][%d]=%d is not a timestamp site %d ever assigned", i, j, k, v, k)
				}
				// Causality: j holds everything k held when k's clock reached v.
				for h := range n {
					if w.have[j][h] < held[h] {
						w.fatalf("causality: site %d has T[%d][%d]=%d, but site %d holds %d records of %d while %d held %d at %d",
							i, j, k, v, j, w.have[j][h], h, k, held[h], v)
					}
				}
			}
			// Prefix knowledge: the j-records i incorporated are exactly those with ts ≤ T[i][j].
			tsj := w.hostTS[j]
			cnt := sort.Search(len(tsj), func(x int) bool { return tsj[x] > l.T(i, j) })
			if w.have[i][j] != cnt {
				w.fatalf("prefix knowledge: site %d holds %d records of %d, but %d have ts ≤ T[i][%d]=%d", i, w.have[i][j], j, cnt, j, l.T(i, j))
			}
		}
		if !w.dirty[i] {
			continue
		}
		w.dirty[i] = false
		// The log holds exactly the incorporated records not yet GC'd, each once, in an order that
		// respects per-host order and causality: scanning it, each record is its host's next one,
		// and everything its host held when creating it is already GC'd or earlier in the log.
		cnt := slices.Clone(w.gcdHost[i])
		for p, r := range l.Records() {
			h := r.Host
			if cnt[h] >= len(w.hostTS[h]) || w.hostTS[h][cnt[h]] != r.TS {
				w.fatalf("site %d: log position %d holds %+v, want site %d's record #%d", i, p, r, h, cnt[h])
			}
			held := w.heldAt[h][cnt[h]]
			cnt[h]++
			for x := range n {
				if cnt[x] < held[x] {
					w.fatalf("site %d: log position %d holds %+v before %d records of site %d that its host held first", i, p, r, held[x]-cnt[x], x)
				}
			}
		}
		if !slices.Equal(cnt, w.have[i]) {
			w.fatalf("site %d: GC'd + logged records per host %v, but incorporated %v", i, cnt, w.have[i])
		}
	}
}

func runRandomRlog(t *testing.T, seed uint64, n int) {
	w := newWorld(t, seed, n)
	// Enough steps that every link sees several full messages (FullEvery) between losses.
	steps := 150*n + w.rng.IntN(100)
	for range steps {
		w.now += w.rng.Int64N(4)
		i := w.rng.IntN(n)
		switch x := w.rng.IntN(100); {
		case x < 25:
			w.appendAt(i)
		case x < 50:
			w.broadcast(i, true)
		case x < 90:
			w.deliverDue(false, true)
		default:
			w.gc(i)
		}
		w.check()
	}
	// Final lossless exchange: drain the network, then rounds in which every site broadcasts and
	// every message is delivered, until three rounds in a row are accepted whole (a link that
	// lost a message asks for a full one in the next round and gets it in the round after).
	w.deliverDue(true, false)
	for round, clean := 0, 0; clean < 3; round++ {
		if round > 8 {
			w.fatalf("no three clean rounds in %d lossless rounds", round)
		}
		w.now += 10
		for i := range n {
			w.broadcast(i, false)
		}
		if w.deliverDue(true, false) {
			clean++
		} else {
			clean = 0
		}
	}
	for i := range n {
		w.gc(i)
	}
	w.check()
	clocks := make([]int64, n)
	for k := range n {
		clocks[k] = w.logs[k].Last()
	}
	for i, l := range w.logs {
		if l.Len() != 0 {
			w.fatalf("site %d still holds %d records after the final exchange and GC", i, l.Len())
		}
		for k := range n {
			if w.have[i][k] != len(w.hostTS[k]) {
				w.fatalf("site %d holds %d of %d records of site %d after the final exchange", i, w.have[i][k], len(w.hostTS[k]), k)
			}
			// Every site's own row is the vector of final clocks. (Whole tables cannot be equal:
			// a site never learns that the others received its latest heartbeat. The rows
			// describing other sites agree instead; see below.)
			if l.T(i, k) != clocks[k] {
				w.fatalf("site %d: T[i][%d]=%d, want site %d's final clock %d", i, k, l.T(i, k), k, clocks[k])
			}
			for j := range n {
				// Every site knows every site holds every record.
				if len(w.hostTS[k]) > 0 && l.T(j, k) < w.hostTS[k][len(w.hostTS[k])-1] {
					w.fatalf("site %d: T[%d][%d]=%d below site %d's last record", i, j, k, l.T(j, k), k)
				}
				// Sites agree on what they know of j: row j as of j's last broadcast.
				if i != j {
					other := (j + 1) % n
					if other == i {
						other = (other + 1) % n
					}
					if other != j && l.T(j, k) != w.logs[other].T(j, k) {
						w.fatalf("sites %d and %d disagree on T[%d][%d]: %d vs %d", i, other, j, k, l.T(j, k), w.logs[other].T(j, k))
					}
				}
			}
		}
	}
}

func TestRandomizedInvariants(t *testing.T) {
	for _, n := range []int{2, 3, 5} {
		t.Run(fmt.Sprintf("sites=%d", n), func(t *testing.T) {
			t.Parallel()
			for seed := uint64(1); seed <= 100; seed++ {
				runRandomRlog(t, seed, n)
				if t.Failed() {
					t.Fatalf("seed %d failed", seed)
				}
			}
		})
	}
}

// state is a log's whole observable state.
type state struct {
	last    int64
	length  int
	table   []int64
	records []Record[int] // nil in a light snapshot
}

func snapshot(l *Log[int]) state {
	s := state{last: l.Last(), length: l.Len(), records: slices.Clone(l.Records())}
	for j := range l.Sites() {
		for k := range l.Sites() {
			s.table = append(s.table, l.T(j, k))
		}
	}
	return s
}

// lightSnapshot is snapshot with only the number of records.
func lightSnapshot(l *Log[int]) state {
	s := state{last: l.Last(), length: l.Len()}
	for j := range l.Sites() {
		for k := range l.Sites() {
			s.table = append(s.table, l.T(j, k))
		}
	}
	return s
}

func (s state) equal(o state) bool {
	return s.last == o.last && s.length == o.length && slices.Equal(s.table, o.table) && slices.Equal(s.records, o.records)
}

// capture returns a send func that stores messages by destination.
func capture(into map[int]*Message[int]) func(int, *Message[int]) {
	return func(to int, m *Message[int]) { into[to] = m }
}

func countIncorporate(n *int) func(Record[int]) { return func(Record[int]) { *n++ } }

func TestAppendTimestamps(t *testing.T) {
	l := New[string](1, 3)
	if r := l.Append(0, "a"); r.TS != 1 || r.Host != 1 || r.Payload != "a" {
		t.Fatalf("first logical Append = %+v, want ts 1 at host 1", r)
	}
	if r := l.Append(0, "b"); r.TS != 2 {
		t.Fatalf("second logical Append ts = %d, want 2", r.TS)
	}
	if r := l.Append(100, "c"); r.TS != 100 {
		t.Fatalf("Append with clock 100 ts = %d, want 100", r.TS)
	}
	if r := l.Append(50, "d"); r.TS != 101 {
		t.Fatalf("Append with a clock behind ts = %d, want last+1 = 101", r.TS)
	}
	if sigma := l.Broadcast(101, func(int, *Message[string]) {}); sigma != 102 {
		t.Fatalf("Broadcast σ = %d, want 102", sigma)
	}
	if r := l.Append(0, "e"); r.TS != 103 {
		t.Fatalf("Append after a broadcast ts = %d, want 103 (above the advertised σ)", r.TS)
	}
	if l.Len() != 5 || l.T(1, 1) != 103 || l.Last() != 103 {
		t.Fatalf("Len %d T[1][1] %d Last %d, want 5, 103, 103", l.Len(), l.T(1, 1), l.Last())
	}
}

func TestNewRejectsSiteOutOfRange(t *testing.T) {
	for _, c := range []struct{ self, n int }{{0, 0}, {-1, 2}, {2, 2}, {5, 3}} {
		t.Run(fmt.Sprintf("self=%d,n=%d", c.self, c.n), func(t *testing.T) {
			defer func() {
				if recover() == nil {
					t.Fatalf("New(%d, %d) did not panic", c.self, c.n)
				}
			}()
			New[int](c.self, c.n)
		})
	}
}

// links is a lossless FIFO network for the focused tests: Broadcast queues a message per peer,
// and deliver hands a link's queued messages to the receiver in order.
type links struct {
	t     *testing.T
	logs  []*Log[int]
	queue map[[2]int][]*Message[int]
	calls int // incorporate calls
}

func newLinks(t *testing.T, n int) *links {
	nw := &links{t: t, queue: map[[2]int][]*Message[int]{}}
	for i := range n {
		nw.logs = append(nw.logs, New[int](i, n))
	}
	return nw
}

func (nw *links) broadcast(from int) map[int]*Message[int] {
	out := map[int]*Message[int]{}
	nw.logs[from].Broadcast(0, func(to int, m *Message[int]) {
		out[to] = m
		nw.queue[[2]int{from, to}] = append(nw.queue[[2]int{from, to}], m)
	})
	return out
}

func (nw *links) deliver(from, to int) {
	nw.t.Helper()
	for _, m := range nw.queue[[2]int{from, to}] {
		if err := nw.logs[to].Receive(m, countIncorporate(&nw.calls)); err != nil {
			nw.t.Fatalf("%d→%d message: %v", from, to, err)
		}
	}
	delete(nw.queue, [2]int{from, to})
}

func TestBroadcastUsesOneSigmaAndPerPeerPartialLogs(t *testing.T) {
	const n = 4
	nw := newLinks(t, n)
	c := nw.logs[2].Append(0, 1)
	nw.broadcast(2)
	nw.deliver(2, 0)
	nw.deliver(2, 1)
	nw.broadcast(1)
	nw.deliver(1, 0)
	// Site 0 holds c and knows sites 1 and 2 hold it; site 3 does not.
	a := nw.logs[0].Append(0, 2)
	var order []int
	msgs := map[int]*Message[int]{}
	sigma := nw.logs[0].Broadcast(500, func(to int, m *Message[int]) {
		order = append(order, to)
		msgs[to] = m
	})
	if sigma != 500 || nw.logs[0].Last() != 500 || nw.logs[0].T(0, 0) != 500 {
		t.Fatalf("σ=%d Last=%d T[0][0]=%d, want all 500", sigma, nw.logs[0].Last(), nw.logs[0].T(0, 0))
	}
	if !slices.Equal(order, []int{1, 2, 3}) {
		t.Fatalf("Broadcast sent to %v, want [1 2 3]", order)
	}
	for to, m := range msgs {
		if m.SendTS != sigma || m.Table[0] != sigma || m.From != 0 || !m.Full || m.Base != nil {
			t.Errorf("message to %d: SendTS %d, T[0][0] %d, From %d, Full %v, Base %v; want σ=%d from 0, the first (full) message",
				to, m.SendTS, m.Table[0], m.From, m.Full, m.Base, sigma)
		}
	}
	for to, want := range map[int][]Record[int]{1: {a}, 2: {a}, 3: {c, a}} {
		if !slices.Equal(msgs[to].Records, want) {
			t.Errorf("message to %d carries %v, want %v", to, msgs[to].Records, want)
		}
	}
	// The table is a copy: later changes do not show through.
	nw.logs[0].Append(0, 3)
	if msgs[2].Table[0] != sigma {
		t.Errorf("message table aliases the log's table")
	}
}

// TestIncrementalMessagesAndRepair: after a lost message that carried records, the next
// incremental message is refused, the receiver's next message asks for a full one, and the
// sender's next message is full and repairs the link, a round trip after the gap instead of
// FullEvery messages later.
func TestIncrementalMessagesAndRepair(t *testing.T) {
	l0, l1 := New[int](0, 2), New[int](1, 2)
	var sent []*Message[int]
	bcast := func() *Message[int] {
		l0.Broadcast(0, func(_ int, m *Message[int]) { sent = append(sent, m) })
		return sent[len(sent)-1]
	}
	reply := func() *Message[int] {
		var m *Message[int]
		l1.Broadcast(0, func(_ int, out *Message[int]) { m = out })
		return m
	}
	r1 := l0.Append(0, 1)
	if m := bcast(); !m.Full || !slices.Equal(m.Records, []Record[int]{r1}) {
		t.Fatalf("first message %+v, want full with r1", m)
	}
	// Message 1 is lost. Message 2 carries only what is new and is refused after the gap.
	r2 := l0.Append(0, 2)
	m2 := bcast()
	if m2.Full || !slices.Equal(m2.Records, []Record[int]{r2}) || !slices.Equal(m2.Base, []int64{r1.TS, 0}) {
		t.Fatalf("second message %+v, want incremental with only r2 and base [%d 0]", m2, r1.TS)
	}
	var calls int
	before := snapshot(l1)
	if err := l1.Receive(m2, countIncorporate(&calls)); !errors.Is(err, ErrGap) || calls != 0 || !snapshot(l1).equal(before) {
		t.Fatalf("incremental message after a lost one: err %v, %d incorporated, changed %v; want ErrGap and nothing", err, calls, !snapshot(l1).equal(before))
	}
	// Site 1's next message asks for a full one, and gets it.
	ask := reply()
	if !ask.NeedFull {
		t.Fatalf("message after a rejection %+v, want NeedFull", ask)
	}
	if err := l0.Receive(ask, countIncorporate(new(int))); err != nil {
		t.Fatal(err)
	}
	if m := reply(); m.NeedFull {
		t.Fatal("site 1 asked for a full message twice")
	}
	full := bcast()
	if !full.Full || !slices.Equal(full.Records, []Record[int]{r1, r2}) {
		t.Fatalf("message after the request: %+v, want full with r1 and r2", full)
	}
	if err := l1.Receive(full, countIncorporate(&calls)); err != nil || calls != 2 || l1.T(1, 0) != full.SendTS {
		t.Fatalf("full message: err %v, %d incorporated, T[1][0]=%d; want nil, 2, %d", err, calls, l1.T(1, 0), full.SendTS)
	}
	r3 := l0.Append(0, 3)
	next := bcast()
	if next.Full || !slices.Equal(next.Records, []Record[int]{r3}) {
		t.Fatalf("message after the full one: %+v, want incremental with r3", next)
	}
	if err := l1.Receive(next, countIncorporate(&calls)); err != nil || calls != 3 {
		t.Fatalf("in-sequence incremental message: err %v, %d incorporated", err, calls)
	}
	// Old messages that arrive late change nothing.
	after := snapshot(l1)
	for x, m := range sent[:len(sent)-1] {
		err := l1.Receive(m, countIncorporate(&calls))
		if err != nil && !errors.Is(err, ErrGap) {
			t.Fatalf("late message %d: %v", x, err)
		}
		if calls != 3 || !snapshot(l1).equal(after) {
			t.Fatalf("late message %d changed state", x)
		}
	}
	// ... not even the acceptance of the link: the next message is still accepted.
	r4 := l0.Append(0, 4)
	if err := l1.Receive(bcast(), countIncorporate(&calls)); err != nil || calls != 4 || l1.Records()[len(l1.Records())-1] != r4 {
		t.Fatalf("message after late ones: err %v, %d incorporated", err, calls)
	}
}

// TestLostHeartbeatLeavesNoGap: losing a message that carried nothing new to its receiver (a
// heartbeat) does not make the link refuse the next one, as numbering messages would.
func TestLostHeartbeatLeavesNoGap(t *testing.T) {
	l0, l1 := New[int](0, 2), New[int](1, 2)
	var last *Message[int]
	bcast := func() *Message[int] {
		l0.Broadcast(0, func(_ int, m *Message[int]) { last = m })
		return last
	}
	r1 := l0.Append(0, 1)
	if err := l1.Receive(bcast(), countIncorporate(new(int))); err != nil {
		t.Fatal(err)
	}
	bcast() // a heartbeat, lost
	r2 := l0.Append(0, 2)
	m := bcast()
	var calls int
	if err := l1.Receive(m, countIncorporate(&calls)); err != nil || calls != 1 || l1.Records()[len(l1.Records())-1] != r2 {
		t.Fatalf("message after a lost heartbeat: err %v, %d incorporated; want r2 accepted (r1 %v)", err, calls, r1)
	}
}

func TestDuplicateAndStaleMessagesAreNoOps(t *testing.T) {
	l0, l1 := New[int](0, 2), New[int](1, 2)
	l1.Append(0, 10)
	first := map[int]*Message[int]{}
	l1.Broadcast(0, capture(first))
	l1.Append(0, 11)
	second := map[int]*Message[int]{}
	l1.Broadcast(0, capture(second))

	var calls int
	for _, m := range []*Message[int]{first[0], second[0]} {
		if err := l0.Receive(m, countIncorporate(&calls)); err != nil {
			t.Fatal(err)
		}
	}
	if calls != 2 || l0.Len() != 2 || l0.T(0, 1) != l1.Last() {
		t.Fatalf("after both messages: %d incorporated, %d held, T[0][1]=%d; want 2, 2, %d", calls, l0.Len(), l0.T(0, 1), l1.Last())
	}
	before := snapshot(l0)
	for _, c := range []struct {
		name string
		m    *Message[int]
	}{{"duplicate of the full message", first[0]}, {"duplicate of the incremental message", second[0]}, {"again", second[0]}} {
		calls = 0
		if err := l0.Receive(c.m, countIncorporate(&calls)); err != nil && !errors.Is(err, ErrGap) {
			t.Fatalf("%s: %v", c.name, err)
		}
		if calls != 0 || !snapshot(l0).equal(before) {
			t.Fatalf("%s changed state or incorporated %d records", c.name, calls)
		}
	}
}

func TestReceiveRejectsMalformedMessagesWithoutChangingState(t *testing.T) {
	const n = 3
	// Site 0 has a record and has heard from site 2; site 1 has two records site 0 lacks.
	setup := func() (*Log[int], *Message[int]) {
		nw := newLinks(t, n)
		nw.logs[0].Append(0, 1)
		nw.logs[2].Append(0, 2)
		nw.broadcast(2)
		nw.deliver(2, 0)
		nw.logs[1].Append(0, 3)
		nw.logs[1].Append(0, 4)
		return nw.logs[0], nw.broadcast(1)[0]
	}
	clone := func(m *Message[int]) *Message[int] {
		c := *m
		c.Records, c.Table = slices.Clone(m.Records), slices.Clone(m.Table)
		return &c
	}
	cases := []struct {
		name   string
		mutate func(l0 *Log[int], m *Message[int])
		want   string
	}{
		{"table too short", func(_ *Log[int], m *Message[int]) { m.Table = m.Table[:n*n-1] }, "table entries"},
		{"table too long", func(_ *Log[int], m *Message[int]) { m.Table = append(m.Table, 0) }, "table entries"},
		{"no table", func(_ *Log[int], m *Message[int]) { m.Table = nil }, "table entries"},
		{"from self", func(_ *Log[int], m *Message[int]) { m.From = 0 }, "invalid site 0"},
		{"from negative", func(_ *Log[int], m *Message[int]) { m.From = -1 }, "invalid site -1"},
		{"from out of range", func(_ *Log[int], m *Message[int]) { m.From = n }, "invalid site 3"},
		{"full message with a base", func(_ *Log[int], m *Message[int]) { m.Base = make([]int64, n) }, "base of 3 entries"},
		{"incremental message without a base", func(_ *Log[int], m *Message[int]) { m.Full = false }, "base of 0 entries"},
		{"incremental message with a short base", func(_ *Log[int], m *Message[int]) { m.Full, m.Base = false, make([]int64, n-1) }, "base of 2 entries"},
		{"record of negative host", func(_ *Log[int], m *Message[int]) {
			m.Records = append(m.Records, Record[int]{Host: -1, TS: 1})
		}, "invalid site -1"},
		{"record of host out of range", func(_ *Log[int], m *Message[int]) {
			m.Records = append(m.Records, Record[int]{Host: n, TS: 1})
		}, "invalid site 3"},
		{"our record beyond our clock", func(l0 *Log[int], m *Message[int]) {
			m.Records = append(m.Records, Record[int]{Host: 0, TS: l0.Last() + 1})
		}, "beyond our clock"},
		{"sender claims to know our records beyond our clock", func(l0 *Log[int], m *Message[int]) {
			m.Table[1*n+0] = l0.Last() + 1
		}, "beyond our clock"},
		{"table claims a third site knows our records beyond our clock", func(l0 *Log[int], m *Message[int]) {
			m.Table[2*n+0] = l0.Last() + 5
		}, "beyond our clock"},
		{"table claims we know our records beyond our clock", func(l0 *Log[int], m *Message[int]) {
			m.Table[0*n+0] = l0.Last() + 1
		}, "beyond our clock"},
	}
	t.Run("control: the unmodified message is accepted", func(t *testing.T) {
		l0, m := setup()
		var calls int
		if err := l0.Receive(clone(m), countIncorporate(&calls)); err != nil || calls != 2 {
			t.Fatalf("valid message: err %v, %d incorporated; want nil, 2", err, calls)
		}
	})
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			l0, orig := setup()
			if len(orig.Records) == 0 {
				t.Fatal("setup: message carries no records")
			}
			m := clone(orig)
			c.mutate(l0, m)
			before := snapshot(l0)
			var calls int
			err := l0.Receive(m, countIncorporate(&calls))
			if err == nil {
				t.Fatal("malformed message accepted")
			}
			if !strings.HasPrefix(err.Error(), "rlog: ") || !strings.Contains(err.Error(), c.want) {
				t.Errorf("error %q does not mention %q", err, c.want)
			}
			if calls != 0 {
				t.Errorf("incorporate called %d times for a rejected message", calls)
			}
			if !snapshot(l0).equal(before) {
				t.Errorf("rejected message changed state")
			}
			// Rejection leaves the link as it was: the original message is still accepted.
			if err := l0.Receive(clone(orig), countIncorporate(&calls)); err != nil || calls != 2 {
				t.Errorf("the original message after the malformed one: err %v, %d incorporated", err, calls)
			}
		})
	}
}

func TestGCWaitsUntilEverySiteIsKnownToHoldARecord(t *testing.T) {
	nw := newLinks(t, 3)
	l0 := nw.logs[0]
	exchange := func(from, to int) {
		t.Helper()
		nw.broadcast(from)
		nw.deliver(from, to)
	}
	l0.Append(0, 7)
	exchange(0, 1)
	exchange(1, 0)
	if d := l0.GC(); d != 0 || l0.Len() != 1 {
		t.Fatalf("GC dropped %d while site 2 is not known to hold the record", d)
	}
	if d := nw.logs[1].GC(); d != 0 {
		t.Fatalf("site 1 GC dropped %d while site 2 is not known to hold the record", d)
	}
	exchange(0, 2)
	if d := l0.GC(); d != 0 {
		t.Fatalf("GC dropped %d before hearing back from site 2", d)
	}
	exchange(2, 0)
	if d := l0.GC(); d != 1 || l0.Len() != 0 {
		t.Fatalf("GC dropped %d (len %d), want the record dropped once all sites are known to hold it", d, l0.Len())
	}
	if d := l0.GC(); d != 0 {
		t.Fatalf("second GC dropped %d", d)
	}
	// Sends after GC still carry exactly what each peer lacks.
	r := l0.Append(0, 8)
	out := nw.broadcast(0)
	for to := 1; to <= 2; to++ {
		if !slices.Equal(out[to].Records, []Record[int]{r}) {
			t.Fatalf("message to %d after GC carries %v, want %v", to, out[to].Records, []Record[int]{r})
		}
	}
}

// TestTrimSendsWhatGCSends runs two copies of a network through the same random appends, sends
// and deliveries, one running GC after every send and the other Trim: they send the same
// messages, and after a last GC hold the same records.
func TestTrimSendsWhatGCSends(t *testing.T) {
	const n = 4
	rng := rand.New(rand.NewPCG(7, 11))
	gcNet, trimNet := newLinks(t, n), newLinks(t, n)
	trimmed, kept := 0, 0 // sends after which Trim ran GC, and after which it left records GC dropped
	for step := range 3000 {
		from := rng.IntN(n)
		switch rng.IntN(3) {
		case 0:
			gcNet.logs[from].Append(int64(step), step)
			trimNet.logs[from].Append(int64(step), step)
		case 1:
			sent, trimSent := gcNet.broadcast(from), trimNet.broadcast(from)
			for to, m := range sent {
				if tm := trimSent[to]; !slices.Equal(m.Records, tm.Records) || !slices.Equal(m.Table, tm.Table) ||
					!slices.Equal(m.Base, tm.Base) || m.Full != tm.Full || m.NeedFull != tm.NeedFull {
					t.Fatalf("step %d: %d→%d: GC network sent %+v, Trim network %+v", step, from, to, m, tm)
				}
			}
			gcNet.logs[from].GC()
			before := trimNet.logs[from].Len()
			trimNet.logs[from].Trim()
			if trimNet.logs[from].Len() < before {
				trimmed++
			}
			if trimNet.logs[from].Len() > gcNet.logs[from].Len() {
				kept++
			}
		case 2:
			to := (from + 1 + rng.IntN(n-1)) % n
			gcNet.deliver(from, to)
			trimNet.deliver(from, to)
		}
	}
	if trimmed == 0 || kept == 0 {
		t.Fatalf("Trim ran GC after %d sends and skipped it, with records to drop, after %d: the test needs both", trimmed, kept)
	}
	for i := range n {
		gcNet.logs[i].GC()
		trimNet.logs[i].GC()
		if got, want := trimNet.logs[i].Records(), gcNet.logs[i].Records(); !slices.Equal(got, want) {
			t.Fatalf("site %d holds %v after Trim and GC, %v after GC", i, got, want)
		}
	}
}
