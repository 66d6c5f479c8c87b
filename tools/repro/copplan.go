package repro

import (
	"bytes"
	"fmt"
	"runtime"
	"time"

	"github.com/meridian-kv/meridian/ml/cop"
	"github.com/meridian-kv/meridian/ml/dataset"
	"github.com/meridian-kv/meridian/ml/train"
)

// copLoadTimes are X4's loading measurements of one dataset: the median of the scale's repeats.
type copLoadTimes struct {
	plain, fused, offline time.Duration // read; read with fused planning; a planning pass after reading
	// fusedOverPlain is the median of the repeats' own ratios fused/plain (each pair measured
	// back to back, so that both shared the machine's load).
	fusedOverPlain float64
	textMB         float64
}

// fusedPct is fused planning's cost in percent of plain loading.
func (t copLoadTimes) fusedPct() float64 { return 100 * (t.fusedOverPlain - 1) }

// measureCOPLoad reads d's training set as LIBSVM text from memory (parsing alone, no disk: the
// worst case for planning's share) with and without planning fused in (train.FusedPlanner, the
// planner `meridian ml --planning fused` runs), alternating, and times a separate planning
// pass; each after a garbage collection, so that none pays for another's garbage.
func measureCOPLoad(env Env, sc copScale, d *train.Data) (copLoadTimes, error) {
	var text bytes.Buffer
	if err := dataset.WriteLIBSVM(&text, d.Train); err != nil {
		return copLoadTimes{}, err
	}
	env.progress("cop-x4: loading %s (%.0f MB of LIBSVM text) %d times each way", d.Train.Name, float64(text.Len())/1e6, sc.repeats)
	read := func(on dataset.OnSample) error {
		_, err := dataset.ReadLIBSVM(bytes.NewReader(text.Bytes()), d.Train.Name, on)
		return err
	}
	var plain, fused, offline []float64
	timed := func(times *[]float64, load func() error) error {
		runtime.GC()
		start := time.Now()
		err := load()
		*times = append(*times, time.Since(start).Seconds())
		return err
	}
	for range sc.repeats {
		if err := timed(&plain, func() error { return read(nil) }); err != nil {
			return copLoadTimes{}, err
		}
		if err := timed(&fused, func() error {
			planner := train.NewFusedPlanner(0) // as a file is planned
			err := read(planner.OnSample)
			planner.Flush()
			return err
		}); err != nil {
			return copLoadTimes{}, err
		}
		if err := timed(&offline, func() error {
			_, err := cop.PlanAll(d.Txns)
			return err
		}); err != nil {
			return copLoadTimes{}, err
		}
	}
	sec := func(vs []float64) time.Duration { return time.Duration(median(vs) * float64(time.Second)) }
	ratios := make([]float64, len(plain))
	for k := range ratios {
		ratios[k] = fused[k] / plain[k]
	}
	return copLoadTimes{plain: sec(plain), fused: sec(fused), offline: sec(offline), fusedOverPlain: median(ratios),
		textMB: float64(text.Len()) / 1e6}, nil
}

// copFirstEpoch is X4's first-epoch measurement of one dataset (samples/s, medians over the
// repeats): plain Locking's first epoch, Locking's first epoch recording the plan, and the later
// epochs of COP on that plan and on the offline plan.
type copFirstEpoch struct {
	locking, recording, laterRecorded, laterOffline float64
}

// measureCOPFirstEpoch alternates the three runs the scale's repeats times with w workers.
func measureCOPFirstEpoch(env Env, sc copScale, d *train.Data, w int) (copFirstEpoch, error) {
	firstEpoch := *d // the same data, its plan left to COP's first epoch (train.FirstEpoch)
	firstEpoch.Plan, firstEpoch.Planning = nil, train.Planning{Mode: train.FirstEpoch}
	var locking, recording, laterRecorded, laterOffline []float64
	for range sc.repeats {
		res, err := copTrain(env, copScale{epochs: 1}, "cop-x4", d, cop.Locking, w)
		if err != nil {
			return copFirstEpoch{}, err
		}
		locking = append(locking, res.Epochs[0].SamplesPerSec)
		if res, err = copTrain(env, sc, "cop-x4 (first-epoch planning)", &firstEpoch, cop.COP, w); err != nil {
			return copFirstEpoch{}, err
		}
		recording = append(recording, res.Epochs[0].SamplesPerSec)
		laterRecorded = append(laterRecorded, epochRates(res, 2, sc.epochs)...)
		if res, err = copTrain(env, sc, "cop-x4 (offline planning)", d, cop.COP, w); err != nil {
			return copFirstEpoch{}, err
		}
		laterOffline = append(laterOffline, epochRates(res, 2, sc.epochs)...)
	}
	return copFirstEpoch{locking: median(locking), recording: median(recording),
		laterRecorded: median(laterRecorded), laterOffline: median(laterOffline)}, nil
}

func runCOPX4(env Env, sc copScale) (*Report, error) {
	w := copTop()
	r := &Report{Name: "cop-x4", Title: experiments["cop-x4"].Title}
	loading := Series{Name: "loading", Kind: KindBars, Title: "Loading LIBSVM text from memory, with and without fused planning",
		XLabel: "dataset", YLabel: "ms", Lines: []Line{{Label: "plain loading"}, {Label: "loading with fused planning"}, {Label: "planning pass after loading"}}}
	epochs := Series{Name: "first-epoch", Kind: KindBars, Title: fmt.Sprintf("Planning during the first epoch, %d workers; %s", w, copMachine()),
		XLabel: "dataset", YLabel: "M samples/s", Lines: []Line{{Label: "Locking, epoch 1"}, {Label: "Locking recording the plan, epoch 1"},
			{Label: "COP on the recorded plan, epochs 2+"}, {Label: "COP on the offline plan, epochs 2+"}}}
	for _, p := range copPaperSets {
		d, err := copLoad(env, sc, p.ours, train.Planning{Mode: train.Offline})
		if err != nil {
			return nil, err
		}
		lt, err := measureCOPLoad(env, sc, d)
		if err != nil {
			return nil, err
		}
		fe, err := measureCOPFirstEpoch(env, sc, d, w)
		if err != nil {
			return nil, err
		}
		set := fmt.Sprintf("%s (%s)", p.ours, p.paper)
		r.Claims = append(r.Claims,
			within(fmt.Sprintf("loading with fused planning, %s: slower than plain loading by 3–5%% (±1 point)", set), 4, lt.fusedPct(), 1, "%"),
			within(fmt.Sprintf("first epoch under Locking recording the plan against plain Locking, %s, %d workers (within 1%%)", set, w),
				0, pctChange(fe.locking, fe.recording), 1, "%"),
			within(fmt.Sprintf("later epochs of COP on the first epoch's plan against the offline plan, %s, %d workers (within 1%%)", set, w),
				0, pctChange(fe.laterOffline, fe.laterRecorded), 1, "%"),
		)
		loading.Categories = append(loading.Categories, fmt.Sprintf("%s (%.0f MB)", p.ours, lt.textMB))
		for i, v := range []time.Duration{lt.plain, lt.fused, lt.offline} {
			loading.Lines[i].Y = append(loading.Lines[i].Y, ms(v.Microseconds()))
		}
		epochs.Categories = append(epochs.Categories, p.ours)
		for i, v := range []float64{fe.locking, fe.recording, fe.laterRecorded, fe.laterOffline} {
			epochs.Lines[i].Y = append(epochs.Lines[i].Y, v/1e6)
		}
	}
	r.Series = []Series{loading, epochs}
	return r, nil
}
