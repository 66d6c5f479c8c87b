package workload

import (
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"sync"

	"github.com/meridian-kv/meridian/client"
	"github.com/meridian-kv/meridian/protocol"
	"github.com/meridian-kv/meridian/protocol/txn"
	"github.com/meridian-kv/meridian/protocols/registry"
)

// TPCC is the object-based TPC-C of ALVIN's evaluation (spec alvin.md §7.2): one key per row,
// the five TPC-C transactions as interactive transactions whose writes depend on their reads,
// run by closed-loop clients each bound to a home warehouse of its own datacenter (one replica
// per datacenter in the ReadWrite family, so "per node" is per datacenter here).
//
// Choices where the spec and the seed are silent (write them where a user would look):
//   - Initial data: no load phase. A key never written holds its initial row, a pure function
//     of its ids (prices, stock quantities and taxes from a hash of the ids; YTDs 30,000.00 per
//     district and their sum per warehouse; next order id 1): the TPC-C population without the
//     initial 3,000 orders per district, so orders, new-orders, order lines and history start
//     empty and the final checks cover every order a run created.
//   - Customers are selected by id (NURand), never by last name.
//   - No NewOrder rolls back for an invalid item (TPC-C's 1%).
//   - Indexes a row store would scan are rows too: per district, the oldest undelivered order
//     id (Delivery's cursor, key "q"); per customer, its last order id (OrderStatus, key "x").
//   - Delivery is one transaction for the ten districts of its warehouse, as in TPC-C.
//   - Money is in cents; dates are not modelled (delivered is a flag).
//   - CPU per transaction: the simulator's service-time model charges it per commit request
//     (bench --cpu-per-commit, sim.Service.PerCommitUs); the workload adds none of its own.
type TPCC struct {
	// WarehousesPerDC is W per datacenter (spec: 1 per node).
	WarehousesPerDC int
	// Districts per warehouse (10), CustomersPerDistrict (3,000) and Items (100,000) size the
	// tables; initial rows cost nothing, so they only change the key space.
	Districts, CustomersPerDistrict, Items int
	// Mix is "write" (NewOrder 49%, Payment 47%, Delivery 2%, OrderStatus 1%, StockLevel 1%) or
	// "roX" for X% read-only transactions split evenly between OrderStatus and StockLevel, the
	// rest NewOrder:Payment:Delivery = 45:43:4 (spec §7.2).
	Mix string
	// RemoteLinePct is the percentage of order lines supplied by another warehouse (TPC-C: 1),
	// RemotePaymentPct that of Payments for a customer of another warehouse (TPC-C: 15): the
	// contention knobs spec §8 A20 asks to sweep.
	RemoteLinePct, RemotePaymentPct float64
	// Unsafe selects a deliberately broken transaction, for tests that show the consistency
	// checks catch it: "" (none) or UnsafePaymentSkipsDistrictYTD.
	Unsafe string
}

// UnsafePaymentSkipsDistrictYTD is the broken Payment that does not add its amount to its
// district's YTD, which breaks TPC-C consistency condition 1.
const UnsafePaymentSkipsDistrictYTD = "payment-skips-district-ytd"

// DefaultTPCC is TPC-C at the spec's scale with the write-intensive mix.
func DefaultTPCC() TPCC {
	return TPCC{WarehousesPerDC: 1, Districts: 10, CustomersPerDistrict: 3000, Items: 100_000, Mix: "write",
		RemoteLinePct: 1, RemotePaymentPct: 15}
}

// The transaction types, in the order of TPCCTypes.
const (
	newOrder = iota
	payment
	orderStatus
	delivery
	stockLevel
)

// TPCCTypes names the transaction types in results.
var TPCCTypes = [...]string{"new_order", "payment", "order_status", "delivery", "stock_level"}

// Name is "tpcc".
func (c TPCC) Name() string { return "tpcc" }

// Family is registry.ReadWrite: interactive read-write transactions on full replicas.
func (c TPCC) Family() registry.Family { return registry.ReadWrite }

// ClientStream is the client's id.
func (c TPCC) ClientStream(id txn.ClientID) uint64 { return uint64(id) }

// ExtraClientsPerDC is 0.
func (c TPCC) ExtraClientsPerDC() int { return 0 }

// Validate reports the first invalid setting.
func (c TPCC) Validate() error {
	switch {
	case c.WarehousesPerDC < 1:
		return fmt.Errorf("workload: tpcc needs at least 1 warehouse per datacenter, got %d", c.WarehousesPerDC)
	case c.Districts < 1 || c.CustomersPerDistrict < 1:
		return fmt.Errorf("workload: tpcc needs at least 1 district and 1 customer per district, got %d and %d", c.Districts, c.CustomersPerDistrict)
	case c.Items < 15:
		return fmt.Errorf("workload: tpcc needs at least 15 items (an order has up to 15 distinct ones), got %d", c.Items)
	case !(c.RemoteLinePct >= 0 && c.RemoteLinePct <= 100 && c.RemotePaymentPct >= 0 && c.RemotePaymentPct <= 100):
		return fmt.Errorf("workload: tpcc remote percentages must be in [0, 100], got %g and %g", c.RemoteLinePct, c.RemotePaymentPct)
	case c.Unsafe != "" && c.Unsafe != UnsafePaymentSkipsDistrictYTD:
		return fmt.Errorf("workload: unknown unsafe tpcc variant %q", c.Unsafe)
	}
	_, err := c.weights()
	return err
}

// weights returns the mix's percentage of each transaction type.
func (c TPCC) weights() ([len(TPCCTypes)]float64, error) {
	if c.Mix == "write" {
		return [...]float64{49, 47, 1, 2, 1}, nil
	}
	x, err := strconv.ParseFloat(strings.TrimPrefix(c.Mix, "ro"), 64)
	if !strings.HasPrefix(c.Mix, "ro") || err != nil || !(x >= 0 && x <= 100) {
		return [5]float64{}, fmt.Errorf(`workload: tpcc mix must be "write" or "roX" with X%% read-only in [0, 100], got %q`, c.Mix)
	}
	rw := (100 - x) / 92
	return [...]float64{45 * rw, 43 * rw, x / 2, 4 * rw, x / 2}, nil
}

// NewRun returns the client side of one TPC-C run. Its final check reads the whole database
// the run wrote at quiescence and checks TPC-C's consistency conditions (tpcccheck.go).
func (c TPCC) NewRun(info RunInfo) (Run, error) {
	if err := c.Validate(); err != nil {
		return nil, err
	}
	w, _ := c.weights()
	r := &tpccRun{cfg: c, info: info, warehouses: int64(c.WarehousesPerDC * info.Topology.N())}
	for i, p := range w {
		r.cumPct[i] = p
		if i > 0 {
			r.cumPct[i] += r.cumPct[i-1]
		}
	}
	return r, nil
}

// tpccRun is the state one run's clients share.
type tpccRun struct {
	cfg        TPCC
	info       RunInfo
	warehouses int64
	cumPct     [len(TPCCTypes)]float64 // cumulative mix

	mu         sync.Mutex
	types      [len(TPCCTypes)]typeStats
	badRows    int
	violations []string
	checked    TPCCChecked
}

// TPCCMetrics are TPC-C's own figures of a run (JSON "workload_metrics").
type TPCCMetrics struct {
	Mix        string `json:"mix"`
	Warehouses int    `json:"warehouses"`
	// Types has the figures of each transaction type (TPCCTypes), over every datacenter.
	Types map[string]TypeMetrics `json:"types"`
	// NewOrdersPerMin is committed NewOrders per minute over every datacenter (tpmC).
	NewOrdersPerMin float64 `json:"tpmc"`
	// Checked says what the final consistency check covered, Consistency what it found.
	Checked     TPCCChecked `json:"checked"`
	Consistency []string    `json:"consistency_violations"`
	// BadRows counts values read (during the run or at its end) that are not rows.
	BadRows int `json:"bad_rows"`
}

// TPCCChecked counts the rows the final consistency check read.
type TPCCChecked struct {
	Districts  int `json:"districts"`
	Orders     int `json:"orders"`
	OrderLines int `json:"order_lines"`
}

// Violations lists broken TPC-C consistency conditions and unreadable rows.
func (m *TPCCMetrics) Violations() []string { return withBadRows(m.Consistency, m.BadRows) }

func (r *tpccRun) Tick([]protocol.Replica, int64) {}

func (r *tpccRun) Metrics() Metrics {
	r.mu.Lock()
	defer r.mu.Unlock()
	windowS := float64(r.info.WindowUs[1]-r.info.WindowUs[0]) / 1e6
	m := &TPCCMetrics{Mix: r.cfg.Mix, Warehouses: int(r.warehouses), Types: map[string]TypeMetrics{},
		Checked: r.checked, Consistency: append([]string{}, r.violations...), BadRows: r.badRows}
	for i, name := range TPCCTypes {
		m.Types[name] = r.types[i].metrics(windowS)
	}
	m.NewOrdersPerMin = 60 * m.Types[TPCCTypes[newOrder]].TPS
	return m
}

func (r *tpccRun) NewClient(ci ClientInfo) (Client, error) {
	tr, ok := ci.Conn.(client.Transport)
	if !ok {
		return nil, fmt.Errorf("workload: tpcc needs a read-write client transport, got %T", ci.Conn)
	}
	home := int64(ci.DC*r.cfg.WarehousesPerDC + ci.Index%r.cfg.WarehousesPerDC + 1)
	sess := client.NewSession(tr, ci.ID, r.info.Topology.DCs[ci.DC], ci.Name, r.info.Record)
	return &tpccClient{run: r, home: home, it: interactive{conn: ci.Conn, sess: sess}}, nil
}

// The tables' keys: one per row, the table's letter then its ids.
func warehouseKey(w int64) string       { return key('w', w) }
func districtKey(w, d int64) string     { return key('d', w, d) }
func customerKey(w, d, c int64) string  { return key('c', w, d, c) }
func itemKey(i int64) string            { return key('i', i) }
func stockKey(w, i int64) string        { return key('s', w, i) }
func orderKey(w, d, o int64) string     { return key('o', w, d, o) }
func newOrderKey(w, d, o int64) string  { return key('n', w, d, o) }
func lineKey(w, d, o, n int64) string   { return key('l', w, d, o, n) }
func cursorKey(w, d int64) string       { return key('q', w, d) }
func lastOrderKey(w, d, c int64) string { return key('x', w, d, c) }

func key(table byte, ids ...int64) string {
	b := []byte{table}
	for i, id := range ids {
		if i > 0 {
			b = append(b, '.')
		}
		b = strconv.AppendInt(b, id, 10)
	}
	return string(b)
}

// Initial rows and their fields. Absent orders, new-orders and order lines read as zeros.
const (
	districtYTDCents = 3_000_000 // 30,000.00
	// warehouse: tax (basis points), ytd
	wTax, wYTD = 0, 1
	// district: tax, ytd, next order id
	dTax, dYTD, dNext = 0, 1, 2
	// customer: discount (basis points), balance, ytd payment, payment count, delivery count
	cDiscount, cBalance, cYTDPayment, cPayments, cDeliveries = 0, 1, 2, 3, 4
	// stock: quantity, ytd, order count, remote count
	sQty, sYTD, sOrders, sRemote = 0, 1, 2, 3
	// order: customer, line count, all local, carrier (0: not delivered)
	oCustomer, oLines, oAllLocal, oCarrier = 0, 1, 2, 3
	// order line: item, supply warehouse, quantity, amount, delivered
	lItem, lSupply, lQty, lAmount, lDelivered = 0, 1, 2, 3, 4
)

func (r *tpccRun) initialWarehouse(w int64) row {
	return row{hashIn(0, 2000, 1, w), int64(r.cfg.Districts) * districtYTDCents}
}
func initialDistrict(w, d int64) row { return row{hashIn(0, 2000, 2, w, d), districtYTDCents, 1} }
func initialCustomer(w, d, c int64) row {
	return row{hashIn(0, 5000, 3, w, d, c), -1000, 1000, 1, 0}
}
func initialItem(i int64) row     { return row{hashIn(100, 10_000, 4, i)} }
func initialStock(w, i int64) row { return row{hashIn(10, 100, 5, w, i), 0, 0, 0} }

var (
	absentOrder    = row{0, 0, 0, 0}
	absentLine     = row{0, 0, 0, 0, 0}
	absentNewOrder = row{0} // 1 while the order awaits delivery
	initialCursor  = row{1} // the oldest order not delivered yet
	noLastOrder    = row{0} // a customer's last order id
	maxOrderLines  = int64(15)
)

// parse decodes the values of a step's reads, counting those that are not rows (and using the
// initial row instead, so that the transaction goes on).
func (r *tpccRun) parse(vals [][]byte, initial ...row) []row {
	out := make([]row, len(vals))
	for i, v := range vals {
		var err error
		if out[i], err = parseRow(v, initial[i]); err != nil {
			r.mu.Lock()
			r.badRows++
			r.mu.Unlock()
			out[i] = append(row(nil), initial[i]...)
		}
	}
	return out
}

// tpccInput is one transaction's input, drawn once and kept for its retries.
type tpccInput struct {
	kind      int
	w, d      int64
	cw, cd, c int64 // the customer (Payment: possibly of another warehouse)
	amount    int64 // Payment, cents
	items     []int64
	supply    []int64 // NewOrder: each line's supply warehouse
	qty       []int64
	carrier   int64 // Delivery
}

// tpccClient is one closed-loop terminal of its home warehouse.
type tpccClient struct {
	run  *tpccRun
	home int64
	it   interactive
	last tpccInput
}

func (c *tpccClient) Next(rng *rand.Rand, done func(Outcome)) {
	c.last = c.run.draw(rng, c.home)
	c.it.run(c.body(c.last), c.account(c.last.kind, done))
}

// Retry re-runs the last transaction's input from fresh reads (TPC-C's keys depend on what it
// reads: a NewOrder's order id is its district's next).
func (c *tpccClient) Retry(done func(Outcome)) { c.it.retry(c.account(c.last.kind, done)) }

// Abandon does nothing: an unanswered commit is not recorded (the run counts it unfinished).
func (c *tpccClient) Abandon(int64) {}

// account measures the attempts of kind in the measurement window.
func (c *tpccClient) account(kind int, done func(Outcome)) func(Outcome) {
	return func(o Outcome) {
		if now := c.it.conn.NowUs(); c.run.info.Measured(c.it.firstUs, now) {
			c.run.mu.Lock()
			c.run.types[kind].add(o, now-c.it.firstUs)
			c.run.mu.Unlock()
		}
		done(o)
	}
}

// nurand is TPC-C's non-uniform random number in [1, n] (clause 2.1.6) with constant cst, its
// A reduced to n's scale when n is small.
func nurand(rng *rand.Rand, a, cst, n int64) int64 {
	for a > 0 && a >= n {
		a >>= 1
	}
	return ((rng.Int64N(a+1)|rng.Int64N(n))+cst)%n + 1
}

// other draws a warehouse other than w, or w when it is the only one.
func (r *tpccRun) other(rng *rand.Rand, w int64) int64 {
	if r.warehouses == 1 {
		return w
	}
	o := rng.Int64N(r.warehouses-1) + 1
	if o >= w {
		o++
	}
	return o
}

// draw draws a transaction of the home warehouse w.
func (r *tpccRun) draw(rng *rand.Rand, w int64) tpccInput {
	in := tpccInput{w: w, d: rng.Int64N(int64(r.cfg.Districts)) + 1}
	in.cw, in.cd, in.c = w, in.d, nurand(rng, 1023, 259, int64(r.cfg.CustomersPerDistrict))
	x := rng.Float64() * 100
	for in.kind < len(TPCCTypes)-1 && x >= r.cumPct[in.kind] {
		in.kind++
	}
	switch in.kind {
	case newOrder:
		n := 5 + rng.Int64N(11)
		for int64(len(in.items)) < n {
			item := nurand(rng, 8191, 7911, int64(r.cfg.Items))
			if !containsID(in.items, item) {
				supply := w
				if rng.Float64()*100 < r.cfg.RemoteLinePct {
					supply = r.other(rng, w)
				}
				in.items, in.supply, in.qty = append(in.items, item), append(in.supply, supply), append(in.qty, 1+rng.Int64N(10))
			}
		}
	case payment:
		in.amount = 100 + rng.Int64N(500_000-100+1)
		if rng.Float64()*100 < r.cfg.RemotePaymentPct {
			in.cw = r.other(rng, w)
			in.cd = rng.Int64N(int64(r.cfg.Districts)) + 1
		}
	case delivery:
		in.carrier = 1 + rng.Int64N(10)
	}
	return in
}

func containsID(ids []int64, id int64) bool {
	for _, x := range ids {
		if x == id {
			return true
		}
	}
	return false
}

// body returns the transaction of in.
func (c *tpccClient) body(in tpccInput) func(*attempt) {
	r := c.run
	switch in.kind {
	case newOrder:
		return func(a *attempt) { r.newOrder(a, in) }
	case payment:
		return func(a *attempt) { r.payment(a, in) }
	case orderStatus:
		return func(a *attempt) { r.orderStatus(a, in) }
	case delivery:
		return func(a *attempt) { r.delivery(a, in) }
	}
	return func(a *attempt) { r.stockLevel(a, in) }
}

// newOrder (TPC-C 2.4): read the warehouse and district taxes, the customer's discount, each
// item's price and stock; take the district's next order id; insert the order, its new-order
// row and lines; update the stock; record the customer's last order.
func (r *tpccRun) newOrder(a *attempt, in tpccInput) {
	n := len(in.items)
	keys := []string{warehouseKey(in.w), districtKey(in.w, in.d), customerKey(in.w, in.d, in.c)}
	initial := []row{r.initialWarehouse(in.w), initialDistrict(in.w, in.d), initialCustomer(in.w, in.d, in.c)}
	for i, item := range in.items {
		keys = append(keys, itemKey(item), stockKey(in.supply[i], item))
		initial = append(initial, initialItem(item), initialStock(in.supply[i], item))
	}
	a.read(keys, func(vals [][]byte) {
		rows := r.parse(vals, initial...)
		dist := rows[1]
		o := dist[dNext]
		dist[dNext]++
		a.put(keys[1], dist)
		allLocal := int64(1)
		for i := range n {
			item, stock := rows[3+2*i], rows[4+2*i]
			qty := in.qty[i]
			if stock[sQty]-qty >= 10 {
				stock[sQty] -= qty
			} else {
				stock[sQty] += 91 - qty
			}
			stock[sYTD] += qty
			stock[sOrders]++
			if in.supply[i] != in.w {
				stock[sRemote]++
				allLocal = 0
			}
			a.put(keys[4+2*i], stock)
			a.put(lineKey(in.w, in.d, o, int64(i+1)), row{in.items[i], in.supply[i], qty, qty * item[0], 0})
		}
		a.put(orderKey(in.w, in.d, o), row{in.c, int64(n), allLocal, 0})
		a.put(newOrderKey(in.w, in.d, o), row{1})
		a.put(lastOrderKey(in.w, in.d, in.c), row{o})
		a.commit()
	})
}

// payment (TPC-C 2.5): add the amount to the warehouse's and the district's YTD, take it from
// the customer's balance, and insert a history row (its key names the attempt, so it is new).
func (r *tpccRun) payment(a *attempt, in tpccInput) {
	keys := []string{warehouseKey(in.w), districtKey(in.w, in.d), customerKey(in.cw, in.cd, in.c)}
	a.read(keys, func(vals [][]byte) {
		rows := r.parse(vals, r.initialWarehouse(in.w), initialDistrict(in.w, in.d), initialCustomer(in.cw, in.cd, in.c))
		wh, dist, cust := rows[0], rows[1], rows[2]
		wh[wYTD] += in.amount
		a.put(keys[0], wh)
		if r.cfg.Unsafe != UnsafePaymentSkipsDistrictYTD {
			dist[dYTD] += in.amount
			a.put(keys[1], dist)
		}
		cust[cBalance] -= in.amount
		cust[cYTDPayment] += in.amount
		cust[cPayments]++
		a.put(keys[2], cust)
		a.put(key('h', in.w, in.d)+"."+a.tx.ID().String(), row{in.amount})
		a.commit()
	})
}

// orderStatus (TPC-C 2.6, read-only): the customer, its last order and that order's lines.
func (r *tpccRun) orderStatus(a *attempt, in tpccInput) {
	a.read([]string{customerKey(in.w, in.d, in.c), lastOrderKey(in.w, in.d, in.c)}, func(vals [][]byte) {
		o := r.parse(vals, initialCustomer(in.w, in.d, in.c), noLastOrder)[1][0]
		if o == 0 {
			a.commit()
			return
		}
		a.read([]string{orderKey(in.w, in.d, o)}, func(vals [][]byte) {
			lines := min(max(r.parse(vals, absentOrder)[0][oLines], 0), maxOrderLines)
			keys := make([]string, lines)
			for n := range lines {
				keys[n] = lineKey(in.w, in.d, o, n+1)
			}
			a.read(keys, func([][]byte) { a.commit() })
		})
	})
}

// delivery (TPC-C 2.7): in each district of the warehouse, deliver the oldest undelivered
// order, if any: delete its new-order row, advance the district's cursor, set the order's
// carrier and its lines delivered, and credit the customer with the lines' amounts.
func (r *tpccRun) delivery(a *attempt, in tpccInput) {
	districts := int64(r.cfg.Districts)
	cursors := make([]string, districts)
	for d := range districts {
		cursors[d] = cursorKey(in.w, d+1)
	}
	a.read(cursors, func(vals [][]byte) {
		oldest := make([]int64, districts)
		pending := make([]string, districts)
		for d := range districts {
			oldest[d] = r.parse(vals[d:d+1], initialCursor)[0][0]
			pending[d] = newOrderKey(in.w, d+1, oldest[d])
		}
		a.read(pending, func(vals [][]byte) {
			var ds []int64 // the districts with an order to deliver
			var orders []string
			for d := range districts {
				if r.parse(vals[d:d+1], absentNewOrder)[0][0] == 1 {
					ds = append(ds, d+1)
					orders = append(orders, orderKey(in.w, d+1, oldest[d]))
				}
			}
			a.read(orders, func(vals [][]byte) {
				ords := make([]row, len(ds))
				var keys []string
				for i, d := range ds {
					ords[i] = r.parse(vals[i:i+1], absentOrder)[0]
					keys = append(keys, customerKey(in.w, d, ords[i][oCustomer]))
					for n := range min(max(ords[i][oLines], 0), maxOrderLines) {
						keys = append(keys, lineKey(in.w, d, oldest[d-1], n+1))
					}
				}
				a.read(keys, func(vals [][]byte) {
					at := 0
					for i, d := range ds {
						o, ord := oldest[d-1], ords[i]
						lines := min(max(ord[oLines], 0), maxOrderLines)
						cust := r.parse(vals[at:at+1], initialCustomer(in.w, d, ord[oCustomer]))[0]
						sum := int64(0)
						for n := range lines {
							line := r.parse(vals[at+1+int(n):at+2+int(n)], absentLine)[0]
							sum += line[lAmount]
							line[lDelivered] = 1
							a.put(lineKey(in.w, d, o, n+1), line)
						}
						at += 1 + int(lines)
						ord[oCarrier] = in.carrier
						a.put(orders[i], ord)
						a.put(pending[d-1], row{0})
						a.put(cursors[d-1], row{o + 1})
						if ord[oCustomer] != 0 { // 0: an inconsistent read, which cannot commit
							cust[cBalance] += sum
							cust[cDeliveries]++
							a.put(customerKey(in.w, d, ord[oCustomer]), cust)
						}
					}
					a.commit()
				})
			})
		})
	})
}

// stockLevel (TPC-C 2.8, read-only): the district's last 20 orders, their lines, and the stock
// of the distinct items they ordered (TPC-C counts those below a threshold;
// the count is not needed here, the reads are the load).
func (r *tpccRun) stockLevel(a *attempt, in tpccInput) {
	a.read([]string{districtKey(in.w, in.d)}, func(vals [][]byte) {
		next := r.parse(vals, initialDistrict(in.w, in.d))[0][dNext]
		var orders []string
		var ids []int64
		for o := max(next-20, 1); o < next; o++ {
			orders, ids = append(orders, orderKey(in.w, in.d, o)), append(ids, o)
		}
		a.read(orders, func(vals [][]byte) {
			var lines []string
			for i, o := range ids {
				for n := range min(max(r.parse(vals[i:i+1], absentOrder)[0][oLines], 0), maxOrderLines) {
					lines = append(lines, lineKey(in.w, in.d, o, n+1))
				}
			}
			a.read(lines, func(vals [][]byte) {
				var items []int64
				var stocks []string
				for _, v := range vals {
					item := r.parse([][]byte{v}, absentLine)[0][lItem]
					if item > 0 && !containsID(items, item) {
						items, stocks = append(items, item), append(stocks, stockKey(in.w, item))
					}
				}
				a.read(stocks, func([][]byte) { a.commit() })
			})
		})
	})
}
