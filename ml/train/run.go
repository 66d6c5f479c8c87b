package train

import (
	"cmp"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"math"
	"time"

	"github.com/meridian-kv/meridian/ml/cop"
	"github.com/meridian-kv/meridian/ml/svm"
	"github.com/meridian-kv/meridian/verify/checker"
)

// Options configures a training run.
type Options struct {
	Epochs int
	Lambda float64
	// Chunk is how many consecutive transactions a worker takes at a time (0:
	// cop.DefaultChunk, COP's chosen from its plan by cop.ChunkFor); Striped deals them out ahead of time, round robin, instead of through
	// the shared counter.
	Chunk   int
	Striped bool
	// Check records the last epoch and runs the serializability checker on it (for every scheme
	// but Serial, serial by construction). Recording slows that epoch, so it is left out of the
	// run's throughput (unless it is the only one).
	Check bool
	// Progress, if not nil, is called before every epoch.
	Progress func(epoch int)
	// Checkpoint, if not nil, is called at every epoch barrier with the epoch just finished
	// and the parameters after it, for a restarted run to Resume from; an error stops the run.
	Checkpoint func(c Checkpoint) error
	// Resume, if not nil, continues a run after its checkpointed epoch: the parameters start
	// as they were at that barrier, the step as it is in the next epoch, and the epochs up to
	// it are not run again. The data must carry its plan (not FirstEpoch planning).
	Resume *Checkpoint
}

// Checkpoint is a run's state at an epoch barrier: the number of epochs finished and the
// parameters after them.
type Checkpoint struct {
	Epoch  int
	Params []float64
}

// EpochResult is one epoch of a run: its throughput, and the model's accuracy and loss after it.
type EpochResult struct {
	Epoch         int     `json:"epoch"`
	Scheme        string  `json:"scheme"` // COP's first epoch with first-epoch planning runs under "locking"
	SamplesPerSec float64 `json:"samples_per_s"`
	Accuracy      float64 `json:"accuracy"`
	Loss          float64 `json:"loss"`
	Restarts      int64   `json:"restarts,omitempty"` // OCC
	Recorded      bool    `json:"recorded,omitempty"` // recorded for Options.Check
}

// CheckResult is the serializability checker's verdict on a run's recorded epoch.
type CheckResult struct {
	OK       bool   `json:"ok"`
	Summary  string `json:"summary"`
	Expected bool   `json:"anomalies_expected"` // the scheme is not serializable (Ideal)
}

// Result is one training run: a scheme with a number of workers over all epochs.
type Result struct {
	Scheme  string `json:"scheme"`
	Workers int    `json:"workers"`
	// SamplesPerSec is the processed samples per second over all timed epochs (A11: loading
	// and planning excluded, and measured apart).
	SamplesPerSec float64 `json:"samples_per_s"`
	// Accuracy and Loss are the final model's (accuracy on the held-out set if there is one,
	// loss the training objective f(w)/n).
	Accuracy float64 `json:"accuracy"`
	Loss     float64 `json:"loss"`
	// ModelSHA256 is the SHA-256 of the final parameters (float64, little-endian, in parameter
	// order), so that bit-identity with the serial reference can be checked from outside.
	ModelSHA256 string        `json:"model_sha256"`
	Epochs      []EpochResult `json:"epochs"`
	Checker     *CheckResult  `json:"checker,omitempty"`
}

// Run trains the SVM on d with scheme and workers for o.Epochs epochs. COP runs d's plan, or,
// if d was loaded with FirstEpoch planning, its first epoch under Locking while recording the
// plan for the others; the other schemes run the training set in its own order.
func Run(d *Data, scheme cop.Scheme, workers int, o Options) (*Result, error) {
	if o.Epochs < 1 {
		return nil, fmt.Errorf("%d epochs: want at least 1", o.Epochs)
	}
	plan := cop.Unannotated(d.Txns)
	first := scheme
	if scheme == cop.COP {
		if d.Plan != nil {
			plan = d.Plan
		} else {
			first = cop.Locking
		}
	}
	numParams := d.Train.NumFeatures
	opts := cop.Options{Workers: workers, Chunk: o.Chunk, RecordPlan: first != scheme}
	if o.Striped {
		opts.Schedule = cop.Striped(plan.Len(), workers, cmp.Or(o.Chunk, cop.DefaultChunk))
	}
	eng, err := cop.NewEngine(first, plan, numParams, opts)
	if err != nil {
		return nil, err
	}
	sgd := svm.New(d.Train, o.Lambda)
	res := &Result{Scheme: scheme.String(), Workers: workers}
	from := 1
	if r := o.Resume; r != nil {
		switch {
		case first != scheme:
			return nil, fmt.Errorf("resuming needs a plan; this data plans during its first epoch")
		case r.Epoch < 0 || r.Epoch >= o.Epochs:
			return nil, fmt.Errorf("resuming after epoch %d of %d", r.Epoch, o.Epochs)
		}
		if err := eng.SetValues(r.Params); err != nil {
			return nil, err
		}
		for range r.Epoch {
			sgd.EndEpoch()
		}
		from = r.Epoch + 1
	}
	var rec *cop.Recorder
	var timed time.Duration
	timedSamples := 0
	for epoch := from; epoch <= o.Epochs; epoch++ {
		if o.Progress != nil {
			o.Progress(epoch)
		}
		if epoch == 2 && first != scheme { // switch to COP with the plan the first epoch made
			if plan, err = eng.RecordedPlan(); err != nil {
				return nil, err
			}
			opts.RecordPlan = false
			if eng, err = switchEngine(eng, scheme, plan, numParams, opts); err != nil {
				return nil, err
			}
		}
		if o.Check && epoch == o.Epochs && scheme != cop.Serial {
			rec = cop.NewRecorder(workers)
			opts.Observer = rec
			if eng, err = switchEngine(eng, eng.Scheme(), plan, numParams, opts); err != nil {
				return nil, err
			}
		}
		stats := eng.RunEpoch(sgd)
		sgd.EndEpoch()
		w := eng.Values()
		if o.Checkpoint != nil {
			if err := o.Checkpoint(Checkpoint{Epoch: epoch, Params: w}); err != nil {
				return nil, err
			}
		}
		er := EpochResult{Epoch: epoch, Scheme: eng.Scheme().String(), SamplesPerSec: float64(plan.Len()) / stats.Duration.Seconds(),
			Accuracy: svm.Accuracy(w, d.Test), Loss: sgd.Objective(w), Restarts: stats.Restarts, Recorded: rec != nil}
		res.Epochs = append(res.Epochs, er)
		if !er.Recorded || o.Epochs == 1 {
			timed += stats.Duration
			timedSamples += plan.Len()
		}
		if epoch == o.Epochs {
			res.Accuracy, res.Loss, res.ModelSHA256 = er.Accuracy, er.Loss, ModelHash(w)
		}
	}
	res.SamplesPerSec = float64(timedSamples) / timed.Seconds()
	if rec != nil {
		h, err := rec.History()
		if err != nil {
			res.Checker = &CheckResult{Summary: err.Error()}
		} else {
			report := checker.Check(h, checker.Options{})
			res.Checker = &CheckResult{OK: report.OK, Summary: report.Summary()}
		}
		res.Checker.Expected = !scheme.Serializable()
	}
	return res, nil
}

// switchEngine returns a new engine of scheme on plan with opts that starts from old's
// parameters.
func switchEngine(old *cop.Engine, scheme cop.Scheme, plan *cop.Plan, numParams int, opts cop.Options) (*cop.Engine, error) {
	eng, err := cop.NewEngine(scheme, plan, numParams, opts)
	if err != nil {
		return nil, err
	}
	return eng, eng.SetValues(old.Values())
}

// ModelHash returns the hex SHA-256 of the parameters as little-endian float64s.
func ModelHash(w []float64) string {
	h := sha256.New()
	buf := make([]byte, 8)
	for _, v := range w {
		binary.LittleEndian.PutUint64(buf, math.Float64bits(v))
		h.Write(buf)
	}
	return hex.EncodeToString(h.Sum(nil))
}
