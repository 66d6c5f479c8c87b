package cop

import (
	"fmt"
	"math"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Scheme is a way to run the transactions of an epoch on shared parameters.
type Scheme int

const (
	// Serial runs the transactions one at a time in plan order on one worker: the reference
	// every serializable scheme is equivalent to (spec §6.4).
	Serial Scheme = iota
	// COP runs a plan with version comparisons and read counters (Alg. 13, spec §5); its
	// result is bit-identical to Serial's on the same plan. A plan whose transactions each read
	// and write one set (SGD's) runs on per-transaction completion stamps instead of
	// per-parameter versions (chainRunner), which enforce the same plan.
	COP
	// Locking takes a spinlock on every parameter a transaction reads or writes, in ascending
	// order, before it reads (spec §6.1).
	Locking
	// OCC reads without locks, computes, then locks its write set and validates its reads'
	// versions, and restarts if validation fails (spec §6.2).
	OCC
	// Ideal reads and writes with no coordination at all (Hogwild!): the upper bound on
	// throughput, and not serializable (spec §6.3).
	Ideal
)

var schemeNames = [...]string{Serial: "serial", COP: "cop", Locking: "locking", OCC: "occ", Ideal: "ideal"}

// String returns the scheme's name: "serial", "cop", "locking", "occ" or "ideal".
func (s Scheme) String() string {
	if s < 0 || int(s) >= len(schemeNames) {
		return fmt.Sprintf("Scheme(%d)", int(s))
	}
	return schemeNames[s]
}

// SchemeNames lists the schemes' names.
func SchemeNames() []string { return slices.Clone(schemeNames[:]) }

// ParseScheme returns the scheme named name.
func ParseScheme(name string) (Scheme, error) {
	if i := slices.Index(schemeNames[:], name); i >= 0 {
		return Scheme(i), nil
	}
	return 0, fmt.Errorf("unknown scheme %q (want %s)", name, strings.Join(schemeNames[:], ", "))
}

// Serializable reports whether the scheme's runs are serializable (all but Ideal).
func (s Scheme) Serializable() bool { return s != Ideal }

// Computation is the ML computation of the iteration template (Alg. 10): from the values read
// for transaction txn (mu, in the order of its read set) it computes the new value of every
// parameter of its write set (delta, in that order). It must be deterministic and write every
// element of delta, since every planned write must install (A5). Workers call it concurrently
// for different transactions.
type Computation interface {
	Compute(txn int, mu, delta []float64)
}

// DefaultChunk is how many consecutive transactions a worker takes from the shared counter at a
// time: enough that the counter's cache line does not bounce between cores on every
// transaction, few enough that a worker rarely waits for a transaction planned just before its
// own but still pending in another worker's chunk (docs/BENCHMARKS.md measures 1 to 64).
const DefaultChunk = 4

// Options configures an Engine.
type Options struct {
	// Workers is the number of worker goroutines (1 for Serial).
	Workers int
	// Chunk is how many consecutive transactions a worker takes at a time from the shared
	// counter that dispenses them in plan order (0: DefaultChunk, except COP's, chosen from its
	// plan: ChunkFor).
	Chunk int
	// Schedule, if not nil, assigns the transactions to workers ahead of time instead of the
	// counter; it must have one queue per worker.
	Schedule *Schedule
	// Observer, if not nil, sees every read and install (Serial reports nothing). It costs one
	// predictable branch per operation when nil.
	Observer Observer
	// RecordPlan (Locking only) plans the transactions while they run (spec §4.2, mode 4): each
	// takes the next sequence number while it holds all its locks and is annotated by Alg. 12
	// there. RecordedPlan returns the plan, whose order is that sequence.
	RecordPlan bool
}

// EpochStats describes one epoch's run.
type EpochStats struct {
	Duration time.Duration // from the barrier to the last transaction's end
	Restarts int64         // OCC: validations that failed and restarted a transaction
}

// Engine runs epochs of a plan's transactions with one scheme over its own copy of the model
// parameters, which start at zero.
type Engine struct {
	scheme    Scheme
	plan      *Plan
	opts      Options
	numParams int
	run       runner
	workers   []*worker
	comp      Computation // this epoch's, read by the workers
	next      paddedCounter
	recording *planRecording
}

// runner is one scheme's implementation of the iteration template.
type runner interface {
	// txn runs the transaction planned at position id on worker w.
	txn(e *Engine, w *worker, id TxnID)
	// reset is the epoch barrier: versions and counters back to 0 (spec A3).
	reset()
	// values returns a copy of the parameters; setValues overwrites them.
	values() []float64
	setValues(v []float64)
}

// worker is one worker goroutine's state, padded so that workers do not share cache lines.
type worker struct {
	id       int
	mu       []float64 // values read
	delta    []float64 // values to write
	keys     []uint32  // Locking: the union of the read and write sets
	held     []uint64  // Locking, OCC: the metadata words of the locks held
	versions []TxnID   // OCC: the versions read
	restarts int64
	doneUpTo TxnID // COP on a chain: every transaction up to it has finished this epoch
	_        [64]byte
}

// paddedCounter is an atomic counter alone on its cache line.
type paddedCounter struct {
	_ [64]byte
	atomic.Uint64
	_ [56]byte
}

// NewEngine returns an engine that runs plan with scheme over numParams parameters (at least
// the plan's). COP needs an annotated plan; the other schemes use only its order.
func NewEngine(scheme Scheme, plan *Plan, numParams int, opts Options) (*Engine, error) {
	n := plan.Len()
	switch {
	case scheme < Serial || scheme > Ideal:
		return nil, fmt.Errorf("cop: unknown scheme %d", int(scheme))
	case n == 0:
		return nil, fmt.Errorf("cop: no transactions to run")
	case opts.Workers < 1:
		return nil, fmt.Errorf("cop: %s needs at least one worker (got %d)", scheme, opts.Workers)
	case scheme == Serial && opts.Workers != 1:
		return nil, fmt.Errorf("cop: serial runs on one worker (got %d)", opts.Workers)
	case opts.Chunk < 0:
		return nil, fmt.Errorf("cop: negative chunk %d", opts.Chunk)
	case numParams < plan.txns.NumParams():
		return nil, fmt.Errorf("cop: %d parameters, but the transactions access parameter %d", numParams, plan.txns.NumParams()-1)
	case scheme == COP && !plan.annotated():
		return nil, fmt.Errorf("cop: the COP scheme needs an annotated plan")
	case opts.RecordPlan && scheme != Locking:
		return nil, fmt.Errorf("cop: only Locking can record a plan while it runs, not %s", scheme)
	case opts.RecordPlan && plan.order != nil:
		return nil, fmt.Errorf("cop: recording a plan needs the transactions in their own order (Unannotated)")
	case opts.Schedule != nil && len(opts.Schedule.queues) != opts.Workers:
		return nil, fmt.Errorf("cop: the schedule has %d queues for %d workers", len(opts.Schedule.queues), opts.Workers)
	case opts.Schedule != nil && opts.Schedule.n != n:
		return nil, fmt.Errorf("cop: the schedule covers %d transactions, the plan has %d", opts.Schedule.n, n)
	}
	if opts.Chunk == 0 {
		opts.Chunk = DefaultChunk
		if scheme == COP && opts.Schedule == nil {
			opts.Chunk = ChunkFor(plan, opts.Workers)
		}
	}
	e := &Engine{scheme: scheme, plan: plan, opts: opts, numParams: numParams}
	switch scheme {
	case Serial:
		e.run = &serialRunner{params: make([]float64, numParams)}
	case COP:
		if plan.impliedWrites() {
			e.run = newChainRunner(numParams, n, opts.Observer != nil)
		} else {
			e.run = &copRunner{slots: make(slots, numParams)}
		}
	case Locking:
		e.run = &lockingRunner{slots: make(slots, numParams)}
	case OCC:
		e.run = &occRunner{slots: make(slots, numParams)}
	case Ideal:
		r := &idealRunner{params: make([]uint64, numParams)}
		if opts.Observer != nil {
			r.versions = make([]atomic.Uint32, numParams)
		}
		e.run = r
	}
	if opts.RecordPlan {
		e.recording = newPlanRecording(plan.txns, numParams)
	}
	maxReads, maxWrites := 0, 0
	for j := range n {
		maxReads = max(maxReads, len(plan.txns.ReadSet(j)))
		maxWrites = max(maxWrites, len(plan.txns.WriteSet(j)))
	}
	for w := range opts.Workers {
		e.workers = append(e.workers, &worker{id: w, mu: make([]float64, maxReads), delta: make([]float64, maxWrites),
			keys: make([]uint32, 0, maxReads+maxWrites), held: make([]uint64, maxReads+maxWrites), versions: make([]TxnID, maxReads)})
	}
	return e, nil
}

// Scheme returns the engine's scheme.
func (e *Engine) Scheme() Scheme { return e.scheme }

// Values returns a copy of the current parameters.
func (e *Engine) Values() []float64 { return e.run.values() }

// SetValues sets the parameters (len(v) must be the engine's number of parameters), as when a
// run switches scheme between epochs.
func (e *Engine) SetValues(v []float64) error {
	if len(v) != e.numParams {
		return fmt.Errorf("cop: %d values for %d parameters", len(v), e.numParams)
	}
	e.run.setValues(v)
	return nil
}

// RunEpoch runs every transaction of the plan once with c as the computation, on the engine's
// workers, and returns when all have finished (the epoch barrier).
func (e *Engine) RunEpoch(c Computation) EpochStats {
	start := time.Now()
	e.run.reset()
	if e.recording != nil {
		e.recording.reset()
	}
	e.next.Store(0)
	e.comp = c
	var wg sync.WaitGroup
	for _, w := range e.workers {
		w.restarts, w.doneUpTo = 0, 0
		wg.Go(func() { e.work(w) })
	}
	wg.Wait()
	stats := EpochStats{Duration: time.Since(start)}
	for _, w := range e.workers {
		stats.Restarts += w.restarts
	}
	return stats
}

// work runs worker w's share of the epoch. Either way every worker takes its transactions in
// increasing plan order, so the smallest unfinished transaction is always running and never
// waits: COP cannot deadlock (spec §5.4).
func (e *Engine) work(w *worker) {
	if e.opts.Schedule != nil {
		for _, id := range e.opts.Schedule.queues[w.id] {
			e.run.txn(e, w, id)
		}
		return
	}
	n, chunk := uint64(e.plan.Len()), uint64(e.opts.Chunk)
	for {
		end := e.next.Add(chunk)
		if end-chunk >= n {
			return
		}
		for id := end - chunk + 1; id <= min(end, n); id++ {
			e.run.txn(e, w, TxnID(id))
		}
	}
}

// RecordedPlan returns the plan recorded by the last epoch of a Locking engine with
// Options.RecordPlan: the transactions in the order they took their sequence numbers. It can be
// taken once per epoch.
func (e *Engine) RecordedPlan() (*Plan, error) {
	if e.recording == nil || e.recording.seq.Load() != uint64(e.plan.Len()) {
		return nil, fmt.Errorf("cop: no plan recorded (Options.RecordPlan with Locking, then RunEpoch)")
	}
	return e.recording.plan(), nil
}

// spinsBeforeYield is how long a wait busy-spins before it yields the processor (spec §5.2),
// and spinsBeforeOSYield how long it yields to the Go scheduler only before it also yields to
// the kernel.
const (
	spinsBeforeYield   = 100
	spinsBeforeOSYield = 200
)

// backoff is the spin policy of every wait: busy-spin, then yield, so that the transaction being
// waited for can run even with more workers than processors; never sleep. Yielding to the Go
// scheduler (runtime.Gosched) runs another goroutine, but when the worker waited for is a
// thread the kernel has descheduled (more runnable threads than cores: a shared machine), only
// giving the processor back to the kernel (osYield, sched_yield on Linux) lets it run sooner
// than the end of the waiting thread's time slice. Past spinsBeforeOSYield a wait does both: the
// kernel's yield alone would keep this goroutine on its Go processor, so with more workers than
// GOMAXPROCS the transaction waited for could not run until the Go scheduler preempted the
// waiter (TestCOPEquivalentToSerial with 8 workers took 21 s instead of 3 s).
func backoff(spins int) {
	if spins < spinsBeforeYield {
		return
	}
	runtime.Gosched()
	if spins >= spinsBeforeOSYield {
		osYield()
	}
}

// slot is one parameter of the schemes with metadata: its value (float64 bits) and a metadata
// word, side by side so that one cache line holds both. COP: version<<32 | reads of that
// version. Locking, OCC: version<<32 | 1 while locked. Workers access the word atomically
// only; between epochs, when no worker runs, the barrier resets it with plain stores.
type slot struct {
	value uint64
	meta  uint64
}

// locked is the lock bit of Locking's and OCC's metadata words.
const locked = 1

func (s *slot) loadMeta() uint64   { return atomic.LoadUint64(&s.meta) }
func (s *slot) storeMeta(w uint64) { atomic.StoreUint64(&s.meta, w) }
func (s *slot) countRead()         { atomic.AddUint64(&s.meta, 1) }

// lock spins until it sets the lock bit of the metadata word and returns the word as it was
// (unlocked).
func (s *slot) lock() uint64 {
	for spins := 0; ; spins++ {
		if old := s.loadMeta(); old&locked == 0 && atomic.CompareAndSwapUint64(&s.meta, old, old|locked) {
			return old
		}
		backoff(spins)
	}
}

// slots are the parameters of the schemes with metadata (COP, Locking, OCC), whose runners
// embed them for the epoch barrier and the parameter copies. Both run between epochs, when no
// worker accesses the slots, so they use plain loads and stores.
type slots []slot

// reset is the epoch barrier: every version back to 0 (the initial version of the next epoch),
// the values kept.
func (s slots) reset() {
	for i := range s {
		s[i].meta = 0
	}
}

func (s slots) values() []float64 {
	v := make([]float64, len(s))
	for i := range s {
		v[i] = math.Float64frombits(s[i].value)
	}
	return v
}

func (s slots) setValues(v []float64) {
	for i := range s {
		s[i].value = math.Float64bits(v[i])
	}
}

// txnSets returns the index of the transaction planned at position id and its read and write
// sets.
func (e *Engine) txnSets(id TxnID) (j int, reads, writes []uint32) {
	j = e.plan.Index(id)
	return j, e.plan.txns.ReadSet(j), e.plan.txns.WriteSet(j)
}
