package main

import (
	"fmt"
	"io"
	"text/tabwriter"
	"time"

	"github.com/spf13/pflag"

	"github.com/meridian-kv/meridian/tools/bench"
	"github.com/meridian-kv/meridian/workload"
)

// smrFlags are the flags of `meridian bench --workload tpcc|bank` (spec alvin.md §7.2).
type smrFlags struct {
	warehousesPerDC, districts, customers, items int
	mix                                          string
	remoteLinePct, remotePaymentPct              float64
	accounts, auditClients                       int
	maxTransferCents                             int64
	auditInterval                                time.Duration
	calibrate                                    bool
}

// tpccFlags and bankFlags are the flags that mean something for those workloads only.
var (
	tpccFlags = []string{"warehouses-per-dc", "districts", "customers", "items", "mix", "remote-line-pct", "remote-payment-pct"}
	bankFlags = []string{"accounts", "max-transfer-cents", "audit-clients-per-dc", "audit-interval", "calibrate"}
)

func init() {
	workloadOnlyFlags["tpcc"], workloadOnlyFlags["bank"] = tpccFlags, bankFlags
}

// addSMRFlags adds the TPC-C and Bank flags to fs, with their workloads' defaults.
func addSMRFlags(fs *pflag.FlagSet, f *smrFlags) {
	t, b := workload.DefaultTPCC(), workload.DefaultBank()
	fs.IntVar(&f.warehousesPerDC, "warehouses-per-dc", t.WarehousesPerDC, "tpcc: warehouses per datacenter (clients are bound to one of their datacenter's)")
	fs.IntVar(&f.districts, "districts", t.Districts, "tpcc: districts per warehouse")
	fs.IntVar(&f.customers, "customers", t.CustomersPerDistrict, "tpcc: customers per district")
	fs.IntVar(&f.items, "items", t.Items, "tpcc: items (at least 15)")
	fs.StringVar(&f.mix, "mix", t.Mix, "tpcc: write (NewOrder 49%, Payment 47%, Delivery 2%, OrderStatus 1%, StockLevel 1%) or roX (X% read-only, e.g. ro90)")
	fs.Float64Var(&f.remoteLinePct, "remote-line-pct", t.RemoteLinePct, "tpcc: % of order lines supplied by another warehouse")
	fs.Float64Var(&f.remotePaymentPct, "remote-payment-pct", t.RemotePaymentPct, "tpcc: % of payments for a customer of another warehouse")
	fs.IntVar(&f.accounts, "accounts", b.Accounts, "bank: number of accounts (calibrated for 10-20% aborts on the defaults)")
	fs.Int64Var(&f.maxTransferCents, "max-transfer-cents", b.MaxTransferCents, "bank: largest transfer, in cents")
	fs.IntVar(&f.auditClients, "audit-clients-per-dc", b.AuditClientsPerDC, "bank: audit clients per datacenter, besides the transfer clients")
	fs.DurationVar(&f.auditInterval, "audit-interval", time.Duration(b.AuditIntervalMs)*time.Millisecond, "bank: pause before each audit of an audit client")
	fs.BoolVar(&f.calibrate, "calibrate", false, "bank: per protocol, bisect the account count from --accounts until 10-20% of the transfers' attempts abort (runs of the same settings), and report that run")
}

// smrDefaults returns the defaults of workload wl configured by the flags, and false if wl is
// neither tpcc nor bank.
func smrDefaults(f *smrFlags, wl string) (bench.Options, bool) {
	switch wl {
	case "tpcc":
		o := bench.TPCCDefaults()
		o.Workload = workload.TPCC{WarehousesPerDC: f.warehousesPerDC, Districts: f.districts, CustomersPerDistrict: f.customers,
			Items: f.items, Mix: f.mix, RemoteLinePct: f.remoteLinePct, RemotePaymentPct: f.remotePaymentPct}
		return o, true
	case "bank":
		o := bench.BankDefaults()
		b := o.Workload.(workload.Bank)
		b.Accounts, b.MaxTransferCents, b.AuditClientsPerDC, b.AuditIntervalMs = f.accounts, f.maxTransferCents, f.auditClients, int(f.auditInterval.Milliseconds())
		o.Workload = b
		return o, true
	}
	return bench.Options{}, false
}

// calibrationRange is the abort rate Bank's accounts are calibrated for (spec alvin.md §7.2).
var calibrationRange = [2]float64{0.10, 0.20}

// runSim runs protocol p in the simulator: one run, or Bank's calibration runs with --calibrate.
func runSim(f *smrFlags, opts bench.Options, p string) (*bench.Result, error) {
	if f.calibrate {
		return bench.CalibrateBankAccounts(opts, p, calibrationRange[0], calibrationRange[1])
	}
	return bench.Run(opts, p)
}

// printSMRMetrics prints TPC-C's per-type figures, or Bank's audits, below a run's table.
func printSMRMetrics(w io.Writer, r *bench.Result) {
	switch m := r.Metrics.(type) {
	case *workload.TPCCMetrics:
		fmt.Fprintf(w, "TPC-C %s mix, %d warehouses: %.0f tpmC; checked %d districts, %d orders, %d order lines\n",
			m.Mix, m.Warehouses, m.NewOrdersPerMin, m.Checked.Districts, m.Checked.Orders, m.Checked.OrderLines)
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
		fmt.Fprintln(tw, "type\ttxn/s\tcommitted\tattempts\taborts\tmean ms\tp50 ms\tp99 ms\t")
		for _, name := range workload.TPCCTypes {
			t := m.Types[name]
			fmt.Fprintf(tw, "%s\t%.1f\t%d\t%d\t%.1f%%\t%.1f\t%.1f\t%.1f\t\n", name, t.TPS, t.Committed, t.Attempts, 100*t.AbortRate,
				t.Latency.Mean, t.Latency.P50, t.Latency.P99)
		}
		tw.Flush()
	case *workload.BankMetrics:
		fmt.Fprintf(w, "Bank: %d accounts; %d audits committed of %d attempts during the run; audit at quiescence: %t\n",
			m.Accounts, m.Audits, m.AuditAttempts, m.FinalAudit)
		if len(m.Calibration) > 0 {
			fmt.Fprintf(w, "calibration (accounts: abort rate):")
			for _, p := range m.Calibration {
				fmt.Fprintf(w, " %d: %.1f%%", p.Accounts, 100*p.AbortRate)
			}
			if rate := r.AbortRate(); rate < calibrationRange[0] || rate > calibrationRange[1] {
				fmt.Fprintf(w, "; no count reached %.0f-%.0f%%, this is the closest", 100*calibrationRange[0], 100*calibrationRange[1])
			}
			fmt.Fprintln(w)
		}
	default:
		return
	}
	for _, v := range r.Metrics.Violations() {
		fmt.Fprintf(w, "VIOLATION: %s\n", v)
	}
	fmt.Fprintln(w)
}
