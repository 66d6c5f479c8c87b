package bench

import (
	"fmt"
	"math"

	"github.com/meridian-kv/meridian/workload"
)

// maxCalibrationProbes bounds the runs CalibrateBankAccounts makes.
const maxCalibrationProbes = 10

// CalibrateBankAccounts finds, by bisection on a logarithmic scale from the workload's account
// count, a number of Bank accounts for which a run of protocol with opts aborts between lo and
// hi of its transfers' attempts (spec alvin.md §7.2: 10–20%, "for each (N, configuration)"),
// and returns that run, every probe listed in its metrics (workload.BankMetrics.Calibration).
// Fewer accounts, more conflicts: each probe halves the bracket around the target. After
// maxCalibrationProbes runs it returns the probe whose abort rate came closest to the range.
// Every probe must be a good run (Result.Problem).
func CalibrateBankAccounts(opts Options, protocol string, lo, hi float64) (*Result, error) {
	w, ok := opts.Workload.(workload.Bank)
	if !ok {
		return nil, fmt.Errorf("bench: calibration needs the bank workload, not %s", opts.Workload.Name())
	}
	var probes []workload.CalibrationProbe
	var best *Result
	bestMiss := math.Inf(1)
	tooFew, tooMany := 0, 0 // the largest count that aborted too much, the smallest too little
	for accounts := w.Accounts; len(probes) < maxCalibrationProbes; {
		w.Accounts = accounts
		opts.Workload = w
		res, err := Run(opts, protocol)
		if err != nil {
			return nil, err
		}
		if err := res.Problem(); err != nil {
			return nil, fmt.Errorf("%w (calibration probe of %d accounts)\nreplay with: %s", err, accounts, res.Replay)
		}
		rate := res.AbortRate()
		probes = append(probes, workload.CalibrationProbe{Accounts: accounts, AbortRate: rate})
		if miss := max(lo-rate, rate-hi, 0); miss < bestMiss {
			best, bestMiss = res, miss
		}
		if bestMiss == 0 {
			break
		}
		if rate > hi {
			tooFew = accounts
		} else {
			tooMany = accounts
		}
		next := accounts * 4
		switch {
		case rate > hi && tooMany > 0, rate < lo && tooFew > 0:
			next = int(math.Round(math.Sqrt(float64(tooFew) * float64(tooMany))))
		case rate < lo:
			next = max(accounts/4, 2)
		}
		if next == accounts || next == tooFew || next == tooMany {
			break // the bracket is closed: no count lands in the range
		}
		accounts = next
	}
	best.Metrics.(*workload.BankMetrics).Calibration = probes
	return best, nil
}

// AbortRate is the aborted share of the run's measured attempts, over every datacenter.
func (r *Result) AbortRate() float64 {
	committed, aborted := 0, 0
	for _, d := range r.DCs {
		committed += d.Committed
		aborted += d.Aborted
	}
	if committed+aborted == 0 {
		return 0
	}
	return float64(aborted) / float64(committed+aborted)
}
