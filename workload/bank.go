package workload

import (
	"fmt"
	"math/rand/v2"
	"sync"

	"github.com/meridian-kv/meridian/client"
	"github.com/meridian-kv/meridian/protocol"
	"github.com/meridian-kv/meridian/protocol/txn"
	"github.com/meridian-kv/meridian/protocols/registry"
)

// Bank is the Bank workload of ALVIN's evaluation (spec alvin.md §7.2, §8 A21): each
// transaction transfers money between two distinct accounts drawn uniformly, reading both and
// writing both (a − amount, b + amount), so the total balance never changes. Audit clients
// read every account in one transaction during the run, and a fresh client reads them all at
// quiescence: every committed audit must see the initial total.
//
// Accounts is calibrated so that the mean abort rate on the default settings (bench
// BankDefaults: aws-helios, 12 clients per datacenter) is in the spec's 10–20%; the figures
// per protocol, with the command that measured them, are in docs/BENCHMARKS.md. A key never
// written holds the initial balance, so a run needs no load phase.
type Bank struct {
	Accounts            int
	InitialBalanceCents int64
	// MaxTransferCents bounds a transfer's amount, drawn uniformly from [1, MaxTransferCents];
	// balances may go negative (no transfer aborts by choice).
	MaxTransferCents int64
	// AuditClientsPerDC run audits besides the transfer clients, one every AuditIntervalMs
	// (after the previous one committed): a read of every account through the commit path, so
	// only a serializable snapshot commits, and it must sum to the initial total.
	AuditClientsPerDC int
	AuditIntervalMs   int
	// Unsafe selects a deliberately broken transfer, for tests that show the audits catch it:
	// "" (none) or UnsafeTransferLosesCent.
	Unsafe string
}

// UnsafeTransferLosesCent is the broken transfer that credits one cent less than it debits.
const UnsafeTransferLosesCent = "transfer-loses-cent"

// DefaultBank is Bank with the calibrated account count, 1,000.00 per account, transfers of up
// to 100.00, and one audit client per datacenter auditing every 5 seconds.
func DefaultBank() Bank {
	return Bank{Accounts: 6000, InitialBalanceCents: 100_000, MaxTransferCents: 10_000, AuditClientsPerDC: 1, AuditIntervalMs: 5000}
}

// Name is "bank".
func (c Bank) Name() string { return "bank" }

// Family is registry.ReadWrite.
func (c Bank) Family() registry.Family { return registry.ReadWrite }

// ClientStream is the client's id.
func (c Bank) ClientStream(id txn.ClientID) uint64 { return uint64(id) }

// ExtraClientsPerDC is the number of audit clients per datacenter.
func (c Bank) ExtraClientsPerDC() int { return c.AuditClientsPerDC }

// Validate reports the first invalid setting.
func (c Bank) Validate() error {
	switch {
	case c.Accounts < 2:
		return fmt.Errorf("workload: bank needs at least 2 accounts, got %d", c.Accounts)
	case c.InitialBalanceCents < 0 || c.MaxTransferCents < 1:
		return fmt.Errorf("workload: bank needs a non-negative initial balance and a positive maximum transfer, got %d and %d", c.InitialBalanceCents, c.MaxTransferCents)
	case c.AuditClientsPerDC < 0 || c.AuditIntervalMs < 0:
		return fmt.Errorf("workload: bank audit clients and interval must not be negative, got %d and %d", c.AuditClientsPerDC, c.AuditIntervalMs)
	case c.Unsafe != "" && c.Unsafe != UnsafeTransferLosesCent:
		return fmt.Errorf("workload: unknown unsafe bank variant %q", c.Unsafe)
	}
	return nil
}

// NewRun returns the client side of one Bank run.
func (c Bank) NewRun(info RunInfo) (Run, error) {
	if err := c.Validate(); err != nil {
		return nil, err
	}
	r := &bankRun{cfg: c, info: info, total: int64(c.Accounts) * c.InitialBalanceCents, keys: make([]string, c.Accounts)}
	for i := range r.keys {
		r.keys[i] = key('a', int64(i))
	}
	return r, nil
}

// bankRun is the state one run's clients share.
type bankRun struct {
	cfg   Bank
	info  RunInfo
	total int64    // the total balance every audit must see
	keys  []string // the accounts' keys

	mu sync.Mutex
	m  BankMetrics
}

// BankMetrics are Bank's own figures of a run (JSON "workload_metrics").
type BankMetrics struct {
	Accounts int `json:"accounts"`
	// Audits counts the audits that committed during the run (all of them, measured or not),
	// AuditAttempts their attempts.
	Audits        int `json:"audits"`
	AuditAttempts int `json:"audit_attempts"`
	// FinalAudit is set once the audit at quiescence ran.
	FinalAudit bool `json:"final_audit"`
	// BadTotals lists the committed audits whose total was not the initial one.
	BadTotals []string `json:"bad_totals"`
	BadRows   int      `json:"bad_rows"`
	// Calibration lists the runs that chose Accounts (bench.CalibrateBankAccounts), if any.
	Calibration []CalibrationProbe `json:"calibration,omitempty"`
}

// CalibrationProbe is one run of an account-count calibration: its accounts and the aborted
// share of its transfers' attempts.
type CalibrationProbe struct {
	Accounts  int     `json:"accounts"`
	AbortRate float64 `json:"abort_rate"`
}

// Violations lists the audits that saw money created or lost, and unreadable balances.
func (m *BankMetrics) Violations() []string { return withBadRows(m.BadTotals, m.BadRows) }

func (r *bankRun) Tick([]protocol.Replica, int64) {}

func (r *bankRun) Metrics() Metrics {
	r.mu.Lock()
	defer r.mu.Unlock()
	m := r.m
	m.Accounts, m.BadTotals = r.cfg.Accounts, append([]string{}, r.m.BadTotals...)
	return &m
}

func (r *bankRun) NewClient(ci ClientInfo) (Client, error) {
	tr, ok := ci.Conn.(client.Transport)
	if !ok {
		return nil, fmt.Errorf("workload: bank needs a read-write client transport, got %T", ci.Conn)
	}
	sess := client.NewSession(tr, ci.ID, r.info.Topology.DCs[ci.DC], ci.Name, r.info.Record)
	return &bankClient{run: r, audit: ci.Index >= r.info.ClientsPerDC, it: interactive{conn: ci.Conn, sess: sess}}, nil
}

// balances decodes the values of accounts, counting those that are not balances.
func (r *bankRun) balances(vals [][]byte) []int64 {
	out := make([]int64, len(vals))
	bad := 0
	for i, v := range vals {
		b, err := parseRow(v, row{r.cfg.InitialBalanceCents})
		if err != nil {
			bad++
			continue
		}
		out[i] = b[0]
	}
	if bad > 0 {
		r.mu.Lock()
		r.m.BadRows += bad
		r.mu.Unlock()
	}
	return out
}

// totalOf sums the balances of vals.
func (r *bankRun) totalOf(vals [][]byte) int64 {
	sum := int64(0)
	for _, b := range r.balances(vals) {
		sum += b
	}
	return sum
}

// audit reads every account and commits; if it commits, its total must be the initial one.
func (r *bankRun) audit(a *attempt, what string, after func()) {
	a.read(r.keys, func(vals [][]byte) {
		sum := r.totalOf(vals)
		end := a.end
		a.end = func(res client.Result) {
			if res.Status == txn.Committed {
				r.mu.Lock()
				if sum != r.total {
					r.m.BadTotals = append(r.m.BadTotals, fmt.Sprintf("%s %v saw a total balance of %d, not %d", what, a.tx.ID(), sum, r.total))
				}
				r.mu.Unlock()
				after()
			}
			end(res)
		}
		a.commit()
	})
}

// Final audits every account at quiescence, from a fresh client (finalReader).
func (r *bankRun) Final(s Settler) ([]txn.ID, error) {
	vals, err := (&finalReader{s: s, info: r.info}).read(r.keys)
	if err != nil {
		return nil, err
	}
	sum := r.totalOf(vals)
	r.mu.Lock()
	defer r.mu.Unlock()
	r.m.FinalAudit = true
	if sum != r.total {
		r.m.BadTotals = append(r.m.BadTotals, fmt.Sprintf("the audit at quiescence saw a total balance of %d, not %d", sum, r.total))
	}
	return nil, nil
}

// bankClient runs transfers, or audits for an audit client.
type bankClient struct {
	run   *bankRun
	audit bool
	it    interactive
}

func (c *bankClient) Next(rng *rand.Rand, done func(Outcome)) {
	r := c.run
	if c.audit {
		c.it.conn.After(int64(r.cfg.AuditIntervalMs)*1000, func() { c.it.run(c.auditBody, ownMetrics(done)) })
		return
	}
	n := int64(r.cfg.Accounts)
	from := rng.Int64N(n)
	to := rng.Int64N(n - 1)
	if to >= from {
		to++
	}
	amount := 1 + rng.Int64N(r.cfg.MaxTransferCents)
	c.it.run(func(a *attempt) { r.transfer(a, from, to, amount) }, done)
}

// Retry re-runs the last transfer or audit.
func (c *bankClient) Retry(done func(Outcome)) {
	if c.audit {
		done = ownMetrics(done)
	}
	c.it.retry(done)
}

// Abandon does nothing: an unanswered commit is not recorded (the run counts it unfinished).
func (c *bankClient) Abandon(int64) {}

// auditBody is one audit by an audit client.
func (c *bankClient) auditBody(a *attempt) {
	r := c.run
	r.mu.Lock()
	r.m.AuditAttempts++
	r.mu.Unlock()
	r.audit(a, "audit", func() {
		r.mu.Lock()
		r.m.Audits++
		r.mu.Unlock()
	})
}

// ownMetrics marks an audit's outcomes as measured by the workload (not a transfer).
func ownMetrics(done func(Outcome)) func(Outcome) {
	return func(o Outcome) {
		o.OwnMetrics = true
		done(o)
	}
}

// transfer moves amount from account from to account to.
func (r *bankRun) transfer(a *attempt, from, to, amount int64) {
	a.read([]string{r.keys[from], r.keys[to]}, func(vals [][]byte) {
		b := r.balances(vals)
		credit := amount
		if r.cfg.Unsafe == UnsafeTransferLosesCent {
			credit--
		}
		a.put(r.keys[from], row{b[0] - amount})
		a.put(r.keys[to], row{b[1] + credit})
		a.commit()
	})
}
