package repro

import (
	"fmt"

	"github.com/meridian-kv/meridian/ml/cop"
	"github.com/meridian-kv/meridian/ml/train"
)

// copSources is Fig. 6.1's number of collection datacenters.
const copSources = 4

func runCOPX5(env Env, sc copScale) (*Report, error) {
	w := copTop()
	r := &Report{Name: "cop-x5", Title: experiments["cop-x5"].Title}
	offline, err := copLoad(env, sc, "kdd-like", train.Planning{Mode: train.Offline})
	if err != nil {
		return nil, err
	}
	sources, err := copLoad(env, sc, "kdd-like", train.Planning{Mode: train.Sources, Sources: copSources})
	if err != nil {
		return nil, err
	}
	var atSources, atCentre, locking []float64
	for range sc.repeats {
		for _, run := range []struct {
			d      *train.Data
			scheme cop.Scheme
			into   *[]float64
		}{{sources, cop.COP, &atSources}, {offline, cop.COP, &atCentre}, {offline, cop.Locking, &locking}} {
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
			copSources, w), 0, pctChange(centre, src), 5, "%"),
		holds(fmt.Sprintf("COP on the sources' plans above Locking at the central site, %d workers", w), "COP > Locking",
			fmt.Sprintf("COP %s, Locking %s", mps(src), mps(lock)), src > lock),
		holds("planning leaves the central site's critical path: admitting (transposing) the batches takes less than planning them there",
			"planning off the critical path", fmt.Sprintf("admission %.1f ms, planning the same samples %.1f ms (at the sources, in turn: %.1f ms)",
				ms(sources.AdmitDuration.Microseconds()), ms(offline.PlanDuration.Microseconds()), ms(sources.PlanDuration.Microseconds())),
			sources.AdmitDuration < offline.PlanDuration),
	)
	r.Series = []Series{{Name: "throughput", Kind: KindBars, Title: fmt.Sprintf("Central site's throughput, kdd-like, %d workers", w),
		XLabel: "scheme and planning", YLabel: "M samples/s", Categories: []string{"COP, planned at 4 sources", "COP, planned at the centre", "Locking"},
		Lines: []Line{{Label: "median epoch", Y: []float64{src / 1e6, centre / 1e6, lock / 1e6}}}}}
	return r, nil
}

// ms converts microseconds to milliseconds.
func ms(us int64) float64 { return float64(us) / 1000 }
