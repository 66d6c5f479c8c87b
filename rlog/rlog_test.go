package rlog

import (
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
		// The partial log: exactly the held records the receiver is not known to hold, in log order.
		var wantRecs []Record[int]
		for _, r := range l.Records() {
			if l.T(to, r.Host) < r.TS {
				wantRecs = append(wantRecs, r)
			}
		}
		if !slices.Equal(m.Records, wantRecs) {
			w.fatalf("site %d: message to %d carries %v, want %v", i, to, m.Records, wantRecs)
		}
		if lossy && w.rng.Float64() < w.lossP {
			continue
		}
		w.net = append(w.net, inflight{to: to, at: w.now + w.rng.Int64N(w.maxDelay+1), m: m})
		if lossy && w.rng.Float64() < w.dupP {
			w.net = append(w.net, inflight{to: to, at: w.now + w.rng.Int64N(2*w.maxDelay+1), m: m})
		}
	}
}

func (w *world) deliver(f inflight, appendsAllowed bool) {
	i, m := f.to, f.m
	l := w.logs[i]
	table := slices.Clone(m.Table)
	recs := slices.Clone(m.Records)
	err := l.Receive(m, func(r Record[int]) {
		k := recKey{r.Host, r.TS}
		switch {
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
	if err != nil {
		w.fatalf("site %d rejected a well-formed message from %d: %v", i, m.From, err)
	}
	if !slices.Equal(table, m.Table) || !slices.Equal(recs, m.Records) {
		w.fatalf("site %d: Receive modified the message", i)
	}
	for _, r := range m.Records {
		if !w.seen[i][recKey{r.Host, r.TS}] {
			w.fatalf("site %d: record %+v of a received message is not incorporated", i, r)
		}
	}
}

// deliverDue delivers, in random order, every in-flight message due by now (all if flush).
func (w *world) deliverDue(flush, appendsAllowed bool) {
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
	for _, f := range due {
		w.deliver(f, appendsAllowed)
		w.check()
	}
}

func (w *world) gc(i int) {
	l := w.logs[i]
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
	steps := 250 + w.rng.IntN(100)
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
	// every message is delivered.
	w.deliverDue(true, false)
	for range 3 {
		w.now += 10
		for i := range n {
			w.broadcast(i, false)
		}
		w.deliverDue(true, false)
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
	table   []int64
	records []Record[int]
}

func snapshot(l *Log[int]) state {
	s := state{last: l.Last(), records: slices.Clone(l.Records())}
	for j := range l.Sites() {
		for k := range l.Sites() {
			s.table = append(s.table, l.T(j, k))
		}
	}
	return s
}

func (s state) equal(o state) bool {
	return s.last == o.last && slices.Equal(s.table, o.table) && slices.Equal(s.records, o.records)
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

func TestBroadcastUsesOneSigmaAndPerPeerPartialLogs(t *testing.T) {
	const n = 4
	logs := []*Log[int]{New[int](0, n), New[int](1, n), New[int](2, n), New[int](3, n)}
	a := logs[0].Append(0, 1)
	out := map[int]*Message[int]{}
	logs[0].Broadcast(0, capture(out))
	var calls int
	if err := logs[1].Receive(out[1], countIncorporate(&calls)); err != nil {
		t.Fatal(err)
	}
	back := map[int]*Message[int]{}
	logs[1].Broadcast(0, capture(back))
	if err := logs[0].Receive(back[0], countIncorporate(&calls)); err != nil {
		t.Fatal(err)
	}
	// Site 0 now knows site 1 holds a; sites 2 and 3 do not.
	b := logs[0].Append(0, 2)
	msgs := map[int]*Message[int]{}
	var order []int
	sigma := logs[0].Broadcast(500, func(to int, m *Message[int]) {
		order = append(order, to)
		msgs[to] = m
	})
	if sigma != 500 || logs[0].Last() != 500 || logs[0].T(0, 0) != 500 {
		t.Fatalf("σ=%d Last=%d T[0][0]=%d, want all 500", sigma, logs[0].Last(), logs[0].T(0, 0))
	}
	if !slices.Equal(order, []int{1, 2, 3}) {
		t.Fatalf("Broadcast sent to %v, want [1 2 3]", order)
	}
	for to, m := range msgs {
		if m.SendTS != sigma || m.Table[0] != sigma || m.From != 0 {
			t.Errorf("message to %d: SendTS %d, T[0][0] %d, From %d; want σ=%d from 0", to, m.SendTS, m.Table[0], m.From, sigma)
		}
	}
	if want := []Record[int]{b}; !slices.Equal(msgs[1].Records, want) {
		t.Errorf("message to 1 carries %v, want only the record it lacks %v", msgs[1].Records, want)
	}
	for _, to := range []int{2, 3} {
		if want := []Record[int]{a, b}; !slices.Equal(msgs[to].Records, want) {
			t.Errorf("message to %d carries %v, want %v", to, msgs[to].Records, want)
		}
	}
	// The table is a copy: later changes do not show through.
	logs[0].Append(0, 3)
	if msgs[2].Table[0] != sigma {
		t.Errorf("message table aliases the log's table")
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
	if err := l0.Receive(second[0], countIncorporate(&calls)); err != nil {
		t.Fatal(err)
	}
	if calls != 2 || l0.Len() != 2 || l0.T(0, 1) != l1.Last() {
		t.Fatalf("after the newer message: %d incorporated, %d held, T[0][1]=%d; want 2, 2, %d", calls, l0.Len(), l0.T(0, 1), l1.Last())
	}
	before := snapshot(l0)
	for name, m := range map[string]*Message[int]{"duplicate": second[0], "stale": first[0]} {
		calls = 0
		if err := l0.Receive(m, countIncorporate(&calls)); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if calls != 0 || !snapshot(l0).equal(before) {
			t.Fatalf("%s message changed state or incorporated %d records", name, calls)
		}
	}
}

func TestReceiveRejectsMalformedMessagesWithoutChangingState(t *testing.T) {
	const n = 3
	// Site 0 has a record and has heard from site 2; site 1 has two records site 0 lacks.
	setup := func() (*Log[int], *Message[int]) {
		l0, l1, l2 := New[int](0, n), New[int](1, n), New[int](2, n)
		l0.Append(0, 1)
		l2.Append(0, 2)
		from2 := map[int]*Message[int]{}
		l2.Broadcast(0, capture(from2))
		var calls int
		if err := l0.Receive(from2[0], countIncorporate(&calls)); err != nil {
			t.Fatal(err)
		}
		l1.Append(0, 3)
		l1.Append(0, 4)
		from1 := map[int]*Message[int]{}
		l1.Broadcast(0, capture(from1))
		return l0, from1[0]
	}
	clone := func(m *Message[int]) *Message[int] {
		return &Message[int]{From: m.From, SendTS: m.SendTS, Records: slices.Clone(m.Records), Table: slices.Clone(m.Table)}
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
		})
	}
}

func TestGCWaitsUntilEverySiteIsKnownToHoldARecord(t *testing.T) {
	const n = 3
	l := []*Log[int]{New[int](0, n), New[int](1, n), New[int](2, n)}
	var calls int
	exchange := func(from, to int) {
		t.Helper()
		out := map[int]*Message[int]{}
		l[from].Broadcast(0, capture(out))
		if err := l[to].Receive(out[to], countIncorporate(&calls)); err != nil {
			t.Fatal(err)
		}
	}
	l[0].Append(0, 7)
	exchange(0, 1)
	exchange(1, 0)
	if d := l[0].GC(); d != 0 || l[0].Len() != 1 {
		t.Fatalf("GC dropped %d while site 2 is not known to hold the record", d)
	}
	if d := l[1].GC(); d != 0 {
		t.Fatalf("site 1 GC dropped %d while site 2 is not known to hold the record", d)
	}
	exchange(0, 2)
	if d := l[0].GC(); d != 0 {
		t.Fatalf("GC dropped %d before hearing back from site 2", d)
	}
	exchange(2, 0)
	if d := l[0].GC(); d != 1 || l[0].Len() != 0 {
		t.Fatalf("GC dropped %d (len %d), want the record dropped once all sites are known to hold it", d, l[0].Len())
	}
	if d := l[0].GC(); d != 0 {
		t.Fatalf("second GC dropped %d", d)
	}
}
