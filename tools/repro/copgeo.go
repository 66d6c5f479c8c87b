package repro

import (
	"fmt"
	"time"

	"github.com/meridian-kv/meridian/ml/cop"
	"github.com/meridian-kv/meridian/ml/geo"
	"github.com/meridian-kv/meridian/ml/train"
)

// X5's pipeline: every source collects a batch of 1/10 of its share every 100 ms (the paper
// gives no rate; spec §9.3 X5 is ours) and resends after 500 ms without an acknowledgement.
const (
	copBatchesPerSource = 10
	copCollectUs        = 100_000
	copResendUs         = 500_000
)

func runCOPX5(env Env, sc copScale) (*Report, error) {
	w := copTop()
	r := &Report{Name: "cop-x5", Title: experiments["cop-x5"].Title}
	offline, err := copLoad(env, sc, "kdd-like", train.Planning{Mode: train.Offline})
	if err != nil {
		return nil, err
	}
	shares, err := geo.Shares(offline.Train, geo.Sources)
	if err != nil {
		return nil, err
	}
	batch := max(1, shares[0].Len()/copBatchesPerSource)
	env.progress("cop-x5: %d sources ship batches of %d samples to the central site over the simulated WAN", geo.Sources, batch)
	sim, err := geo.Simulate(geo.SimConfig{Shares: shares, BatchSamples: batch, CollectUs: copCollectUs, ResendUs: copResendUs, Seed: env.Seed})
	if err != nil {
		return nil, err
	}
	central, err := sim.Centre.TrainingData()
	if err != nil {
		return nil, err
	}
	// The central site's admission against the sources' planning of the same batches, timed
	// here (the simulator charges no compute).
	var planning, admission time.Duration
	var again cop.Central
	for _, b := range sim.Centre.Admitted() {
		start := time.Now()
		if _, err := geo.NewBatch(b.Source, b.Seq, b.Last, b.Data); err != nil {
			return nil, err
		}
		planning += time.Since(start)
		start = time.Now()
		if _, err := again.Admit(b.Plan); err != nil {
			return nil, err
		}
		admission += time.Since(start)
	}
	var atSources, atCentre, locking []float64
	for range sc.repeats {
		for _, run := range []struct {
			d      *train.Data
			scheme cop.Scheme
			into   *[]float64
		}{{central, cop.COP, &atSources}, {offline, cop.COP, &atCentre}, {offline, cop.Locking, &locking}} {
			res, err := copTrain(env, sc, "cop-x5 ("+run.d.Planning.String()+" planning)", run.d, run.scheme, w)
			if err != nil {
				return nil, err
			}
			*run.into = append(*run.into, epochRates(res, 1, sc.epochs)...)
		}
	}
	src, centre, lock := median(atSources), median(atCentre), median(locking)
	r.Claims = append(r.Claims,
		within(fmt.Sprintf("COP at the central site on the %d sources' transposed batch plans against COP planned offline, kdd-like, %d workers (the same throughput, ±5%%)",
			geo.Sources, w), 0, pctChange(centre, src), 5, "%"),
		holds(fmt.Sprintf("COP on the sources' plans above Locking at the central site, %d workers", w), "COP > Locking",
			fmt.Sprintf("COP %s, Locking %s", mps(src), mps(lock)), src > lock),
		holds("planning leaves the central site's critical path: admitting (transposing) a batch takes less than planning it",
			"planning off the critical path", fmt.Sprintf("%d batches: admission %.1f ms, planning at the sources %.1f ms",
				len(sim.Centre.Admitted()), ms(admission.Microseconds()), ms(planning.Microseconds())),
			admission < planning),
	)
	r.Series = []Series{{Name: "throughput", Kind: KindBars, Title: fmt.Sprintf("Central site's throughput, kdd-like, %d workers; every batch admitted %.0f ms after the start (simulated WAN); %s",
		w, ms(sim.CompletedUs), copMachine()),
		XLabel: "scheme and planning", YLabel: "M samples/s", Categories: []string{"COP, planned at 4 sources", "COP, planned at the centre", "Locking"},
		Lines: []Line{{Label: "median epoch", Y: []float64{src / 1e6, centre / 1e6, lock / 1e6}}}}}
	return r, nil
}

// ms converts microseconds to milliseconds.
func ms(us int64) float64 { return float64(us) / 1000 }
