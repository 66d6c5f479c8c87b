package cop

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/meridian-kv/meridian/verify/checker"
)

// workerCounts are the worker counts of the equivalence tests. The machine may have fewer cores:
// the extra workers then interleave on them, which explores schedules but measures nothing.
var workerCounts = []int{1, 2, 4, 8}

// TestCOPEquivalentToSerial is C-I2 and C-I3: on random transactions (with pure readers and
// blind writers, or each reading and writing one set, whose plans keep no write annotations),
// with any number of workers and random delays at every read and install, COP reads exactly
// the values the serial run in plan order reads, every read returns its planned version, every
// install overwrites its planned version after all its planned readers, and the final model is
// bitwise the serial one, epoch after epoch.
func TestCOPEquivalentToSerial(t *testing.T) {
	const epochs = 3
	seeds := uint64(6)
	if testing.Short() {
		seeds = 2
	}
	for seed := range seeds { // odd seeds: every transaction reads and writes one set (SGD)
		rng := rand.New(rand.NewPCG(seed, 3))
		txns := randomTxns(t, rng, 600, 5+rng.IntN(60), 6)
		if seed%2 == 1 {
			txns = sharedTxns(t, rng, 600, 5+rng.IntN(60), 6)
		}
		plan, err := PlanAll(txns)
		if err != nil {
			t.Fatal(err)
		}
		if plan.impliedWrites() != (seed%2 == 1) {
			t.Fatalf("seed %d: write annotations implied: %v", seed, plan.impliedWrites())
		}
		wantModel, wantReads := serialRun(t, plan, epochs)
		for _, workers := range workerCounts {
			disc := newDiscipline(plan)
			e := mustEngine(t, COP, plan, Options{Workers: workers, Chunk: 1 + rng.IntN(4), Observer: newDelays(workers, seed, disc)})
			var rc *recordingComp
			for range epochs {
				rc = newRecordingComp(mix{}, plan.Len())
				runEpoch(t, e, rc)
			}
			if err := disc.err(); err != nil {
				t.Fatalf("seed %d, %d workers: C-I3: %v", seed, workers, err)
			}
			for j := range wantReads {
				if !slices.Equal(rc.mus[j], wantReads[j]) {
					t.Fatalf("seed %d, %d workers: transaction %d read %v, the serial run %v", seed, workers, j, rc.mus[j], wantReads[j])
				}
			}
			if err := sameBits(e.Values(), wantModel); err != nil {
				t.Fatalf("seed %d, %d workers: the model differs from the serial one: %v", seed, workers, err)
			}
		}
	}
}

// discipline is an Observer that checks C-I3 against the plan: every read returns the planned
// version, every install finds the planned previous version read by its planned readers.
type discipline struct {
	plan     *Plan
	mu       sync.Mutex
	problems []string
}

func newDiscipline(plan *Plan) *discipline { return &discipline{plan: plan} }

func (d *discipline) fail(format string, args ...any) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if len(d.problems) < 5 {
		d.problems = append(d.problems, fmt.Sprintf(format, args...))
	}
}

func (d *discipline) Read(_ int, id TxnID, param uint32, version TxnID) {
	for _, r := range d.plan.Txn(id).Reads {
		if r.Param == param && r.Version != version {
			d.fail("T%d read %d at version %d, planned %d", id, param, version, r.Version)
		}
	}
}

func (d *discipline) Write(_ int, id TxnID, param uint32, prev TxnID, readers uint32) {
	for _, w := range d.plan.Txn(id).Writes {
		if w.Param == param && (w.PWriter != prev || w.PReaders != readers) {
			d.fail("T%d installed %d over version %d read by %d, planned %d read by %d", id, param, prev, readers, w.PWriter, w.PReaders)
		}
	}
}

func (d *discipline) Restart(_ int, id TxnID) { d.fail("COP restarted T%d", id) }

func (d *discipline) err() error {
	if len(d.problems) == 0 {
		return nil
	}
	return fmt.Errorf("%s", strings.Join(d.problems, "; "))
}

// TestDeadlockFreedomCS4 is CS4 (and C-I4): 10,000 transactions over 50 parameters on 2
// workers with random delays finish, whether dispensed by the shared counter one at a time or
// in chunks, or by a striped schedule; the out-of-order schedule of §5.4 is refused.
func TestDeadlockFreedomCS4(t *testing.T) {
	n := 10_000
	if testing.Short() {
		n = 3_000
	}
	rng := rand.New(rand.NewPCG(4, 4))
	plan, err := PlanAll(randomTxns(t, rng, n, 50, 8))
	if err != nil {
		t.Fatal(err)
	}
	want, _ := serialRun(t, plan, 1)
	for _, opts := range []Options{
		{Workers: 2, Chunk: 1},
		{Workers: 2},
		{Workers: 2, Schedule: Striped(n, 2, 3)},
	} {
		opts.Observer = newDelays(2, 4, nil)
		e := mustEngine(t, COP, plan, opts)
		runEpoch(t, e, mix{})
		if err := sameBits(e.Values(), want); err != nil {
			t.Errorf("chunk %d, schedule %v: %v", opts.Chunk, opts.Schedule != nil, err)
		}
	}
	// Worker 1 [T3, T1], worker 2 [T4, T2]: T3 needing T2 and T4 needing T1 would deadlock.
	if _, err := NewSchedule(4, [][]TxnID{{3, 1}, {4, 2}}); err == nil || !strings.Contains(err.Error(), "out of plan order") {
		t.Errorf("the out-of-order schedule was not refused: %v", err)
	}
}

// TestScheduleValidation: a schedule must cover every transaction once, and Striped deals
// chunks round robin.
func TestScheduleValidation(t *testing.T) {
	for _, tc := range []struct {
		queues [][]TxnID
		want   string
	}{
		{[][]TxnID{{1, 2}, {4}}, "T3 is in no queue"},
		{[][]TxnID{{1, 2, 3}, {3, 4}}, "T3 is in two queues"},
		{[][]TxnID{{1, 2, 5}, {3, 4}}, "outside T1…T4"},
		{[][]TxnID{{0}}, "outside"},
	} {
		if _, err := NewSchedule(4, tc.queues); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: error %v, want %q", tc.queues, err, tc.want)
		}
	}
	got := Striped(7, 2, 2).queues
	if want := [][]TxnID{{1, 2, 5, 6}, {3, 4, 7}}; !slices.EqualFunc(got, want, slices.Equal) {
		t.Errorf("Striped(7, 2, 2) = %v, want %v", got, want)
	}
}

// TestBaselinesSerializable is C-I5: Locking and OCC histories, recorded with random delays on
// 4 workers over few parameters (many conflicts), are acyclic for the project's checker.
func TestBaselinesSerializable(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 5))
	plan := Unannotated(randomTxns(t, rng, 2_000, 20, 5))
	for _, s := range []Scheme{Locking, OCC} {
		rec := NewRecorder(4)
		e := mustEngine(t, s, plan, Options{Workers: 4, Chunk: 1, Observer: newDelays(4, 5, rec)})
		for epoch := range 2 {
			rec.Reset()
			stats := runEpoch(t, e, mix{})
			h, err := rec.History()
			if err != nil {
				t.Fatalf("%s epoch %d: %v", s, epoch+1, err)
			}
			if report := checker.Check(h, checker.Options{}); !report.OK || report.Committed != plan.Len() {
				t.Fatalf("%s epoch %d: %v", s, epoch+1, report)
			}
			t.Logf("%s epoch %d: %d restarts, checker ok", s, epoch+1, stats.Restarts)
		}
	}
}

// TestIdealAnomalies is the negative control: Ideal is not serializable and the checker says
// so. Two transactions that read and write the same parameter both read before either writes
// (a lost update): the recorded history has a G2 cycle.
func TestIdealAnomalies(t *testing.T) {
	plan := Unannotated(mustTxns(t, [2][]uint32{set(p), set(p)}, [2][]uint32{set(p), set(p)}))
	sched, err := NewSchedule(2, [][]TxnID{{1}, {2}})
	if err != nil {
		t.Fatal(err)
	}
	rec := NewRecorder(2)
	e := mustEngine(t, Ideal, plan, Options{Workers: 2, Schedule: sched, Observer: rec})
	var both sync.WaitGroup
	both.Add(2)
	runEpoch(t, e, rendezvous{&both})
	h, err := rec.History()
	if err != nil {
		t.Fatal(err)
	}
	report := checker.Check(h, checker.Options{})
	if report.OK || report.Counts[checker.KindG2] == 0 {
		t.Fatalf("the checker did not report the lost update: %v", report)
	}
	if got := e.Values()[p]; got != 1 {
		t.Errorf("p = %v after two increments that both read 0, want 1 (an update lost)", got)
	}
}

// rendezvous adds 1 to what it read once every transaction has read.
type rendezvous struct{ both *sync.WaitGroup }

func (r rendezvous) Compute(_ int, mu, delta []float64) {
	r.both.Done()
	r.both.Wait()
	delta[0] = mu[0] + 1
}

// TestFirstEpochPlanning is mode 4 (spec §4.2): a first epoch under Locking on 4 workers with
// random delays records a well-formed plan (C-I1) in the order its transactions took their
// locks, and its history (observed with plan ids, though the lock words hold sequence numbers
// while recording) is serializable (C-I5); the epoch's model is the serial run's in that order,
// and COP epochs on the recorded plan continue bitwise like the serial run. Both with mixed
// sets (planned by Alg. 12's state) and with one set per transaction (versions taken from the
// lock words).
func TestFirstEpochPlanning(t *testing.T) {
	for _, shared := range []bool{false, true} {
		rng := rand.New(rand.NewPCG(6, 6))
		txns := randomTxns(t, rng, 2_000, 30, 5)
		if shared {
			txns = sharedTxns(t, rng, 2_000, 30, 5)
		}
		rec := NewRecorder(4)
		locking := mustEngine(t, Locking, Unannotated(txns), Options{Workers: 4, Chunk: 1, RecordPlan: true, Observer: newDelays(4, 6, rec)})
		runEpoch(t, locking, mix{})
		recorded, err := locking.RecordedPlan()
		if err != nil {
			t.Fatal(err)
		}
		if err := checkWellFormed(recorded); err != nil {
			t.Fatalf("shared %v: %v", shared, err)
		}
		if recorded.impliedWrites() != shared {
			t.Fatalf("shared %v: recorded write annotations implied: %v", shared, recorded.impliedWrites())
		}
		if _, err := locking.RecordedPlan(); err == nil {
			t.Error("the recorded plan was handed out twice")
		}
		h, err := rec.History()
		if err != nil {
			t.Fatalf("shared %v: %v", shared, err)
		}
		if report := checker.Check(h, checker.Options{}); !report.OK || report.Committed != txns.Len() {
			t.Fatalf("shared %v: the recording epoch's history: %v", shared, report)
		}
		serial := mustEngine(t, Serial, recorded, Options{Workers: 1})
		runEpoch(t, serial, mix{})
		if err := sameBits(locking.Values(), serial.Values()); err != nil {
			t.Fatalf("shared %v: epoch 1 under Locking differs from the serial run in lock order: %v", shared, err)
		}
		cop := mustEngine(t, COP, recorded, Options{Workers: 4, Observer: newDelays(4, 7, nil)})
		if err := cop.SetValues(locking.Values()); err != nil {
			t.Fatal(err)
		}
		for range 2 {
			runEpoch(t, cop, mix{})
			runEpoch(t, serial, mix{})
		}
		if err := sameBits(cop.Values(), serial.Values()); err != nil {
			t.Fatalf("shared %v: COP epochs on the recorded plan differ from the serial run: %v", shared, err)
		}
	}
}

// TestNewEngineErrors: bad configurations are refused with a clear error.
func TestNewEngineErrors(t *testing.T) {
	txns := mustTxns(t, [2][]uint32{set(a, b), set(a, b)}, [2][]uint32{set(b), set(c)})
	plan, err := PlanAll(txns)
	if err != nil {
		t.Fatal(err)
	}
	bare := Unannotated(txns)
	for _, tc := range []struct {
		scheme    Scheme
		plan      *Plan
		numParams int
		opts      Options
		want      string
	}{
		{COP, plan, 3, Options{Workers: 0}, "at least one worker"},
		{COP, Unannotated(mustTxns(t)), 3, Options{Workers: 1}, "no transactions"},
		{Serial, plan, 3, Options{Workers: 2}, "serial runs on one worker"},
		{COP, bare, 3, Options{Workers: 1}, "needs an annotated plan"},
		{OCC, plan, 3, Options{Workers: 1, RecordPlan: true}, "only Locking"},
		{Locking, &Plan{txns: txns, order: []uint32{1, 0}}, 3, Options{Workers: 1, RecordPlan: true}, "in their own order"},
		{Locking, plan, 2, Options{Workers: 1}, "access parameter 2"},
		{COP, plan, 3, Options{Workers: 2, Schedule: Striped(2, 3, 1)}, "3 queues for 2 workers"},
		{COP, plan, 3, Options{Workers: 1, Schedule: Striped(5, 1, 1)}, "covers 5 transactions"},
		{COP, plan, 3, Options{Workers: 1, Chunk: -1}, "negative chunk"},
		{Scheme(9), plan, 3, Options{Workers: 1}, "unknown scheme"},
	} {
		if _, err := NewEngine(tc.scheme, tc.plan, tc.numParams, tc.opts); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s %+v: error %v, want %q", tc.scheme, tc.opts, err, tc.want)
		}
	}
	e := mustEngine(t, Locking, bare, Options{Workers: 1})
	if _, err := e.RecordedPlan(); err == nil {
		t.Error("an engine that records nothing handed out a plan")
	}
	if err := e.SetValues(make([]float64, 2)); err == nil {
		t.Error("SetValues accepted the wrong number of values")
	}
}

// TestSchemeNames: every scheme parses from its name.
func TestSchemeNames(t *testing.T) {
	for _, name := range SchemeNames() {
		s, err := ParseScheme(name)
		if err != nil || s.String() != name {
			t.Errorf("ParseScheme(%q) = %v, %v", name, s, err)
		}
	}
	if _, err := ParseScheme("hogwild"); err == nil {
		t.Error(`ParseScheme("hogwild") succeeded`)
	}
	if Ideal.Serializable() || !OCC.Serializable() {
		t.Error("only Ideal is not serializable")
	}
}

// TestRecorderBrokenChain: two installs over the same version leave no version order, which
// History reports rather than inventing one.
func TestRecorderBrokenChain(t *testing.T) {
	rec := NewRecorder(2)
	rec.Read(0, 1, p, 0)
	rec.Read(1, 2, p, 0)
	rec.Write(0, 1, p, 0, 0)
	rec.Write(1, 2, p, 0, 0)
	if _, err := rec.History(); err == nil || !strings.Contains(err.Error(), "both overwrote version 0") {
		t.Errorf("History: %v, want a broken-chain error", err)
	}
}
