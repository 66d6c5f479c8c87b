package workload

import (
	"fmt"

	"github.com/meridian-kv/meridian/protocol/txn"
)

// maxListedViolations bounds the violations a run lists (the count of the rest is reported).
const maxListedViolations = 20

// Final reads, at quiescence, from a fresh client (finalReader), every warehouse and
// district, every order and new-order row the districts' order ids reach (and the next one,
// which must not exist), and every order line, through committed read-only transactions (the
// history records them; the checker compares every replica's version orders), then checks TPC-C's
// consistency conditions (clause 3.3.2):
//
//  1. a warehouse's YTD is the sum of its districts' YTDs;
//  2. a district's next order id is one past its last order (orders 1 … next−1 exist, next does
//     not), and past its last new-order row;
//  3. its new-order rows are exactly the orders from its delivery cursor to its last, so their
//     ids are contiguous (max − min + 1 = count);
//  4. every order has exactly its line count of order lines (so the sum of the line counts is
//     the number of order lines);
//
// and, with Delivery: an order has a carrier, and its lines are delivered, exactly when it is
// older than its district's delivery cursor.
func (r *tpccRun) Final(s Settler) ([]txn.ID, error) {
	fr := &finalReader{s: s, info: r.info}
	read := func(keys []string, initial func(i int) row) ([]row, error) {
		vals, err := fr.read(keys)
		if err != nil {
			return nil, err
		}
		inits := make([]row, len(keys))
		for i := range inits {
			inits[i] = initial(i)
		}
		return r.parse(vals, inits...), nil
	}
	var bad []string
	report := func(format string, args ...any) { bad = append(bad, fmt.Sprintf(format, args...)) }

	// Warehouses, districts and delivery cursors.
	D := int64(r.cfg.Districts)
	var keys []string
	for w := int64(1); w <= r.warehouses; w++ {
		keys = append(keys, warehouseKey(w))
		for d := int64(1); d <= D; d++ {
			keys = append(keys, districtKey(w, d), cursorKey(w, d))
		}
	}
	per := 1 + 2*D // rows per warehouse
	rows, err := read(keys, func(i int) row {
		w, j := int64(i)/per+1, int64(i)%per
		switch {
		case j == 0:
			return r.initialWarehouse(w)
		case j%2 == 1:
			return initialDistrict(w, (j+1)/2)
		}
		return initialCursor
	})
	if err != nil {
		return nil, err
	}
	type district struct{ w, d, next, cursor int64 }
	var ds []district
	for w := int64(1); w <= r.warehouses; w++ {
		base := (w - 1) * per
		sum := int64(0)
		for d := int64(1); d <= D; d++ {
			dist, cur := rows[base+2*d-1], rows[base+2*d]
			sum += dist[dYTD]
			ds = append(ds, district{w, d, dist[dNext], cur[0]})
			if cur[0] < 1 || cur[0] > dist[dNext] {
				report("district %d.%d: delivery cursor %d outside [1, next order id %d]", w, d, cur[0], dist[dNext])
			}
		}
		if ytd := rows[base][wYTD]; ytd != sum {
			report("condition 1: warehouse %d YTD %d != %d, the sum of its districts' YTDs", w, ytd, sum)
		}
	}

	// Orders and new-order rows, up to each district's next order id.
	keys = keys[:0]
	var initial []row
	for _, x := range ds {
		for o := int64(1); o <= max(x.next, 1); o++ {
			keys = append(keys, orderKey(x.w, x.d, o), newOrderKey(x.w, x.d, o))
			initial = append(initial, absentOrder, absentNewOrder)
		}
	}
	if rows, err = read(keys, func(i int) row { return initial[i] }); err != nil {
		return nil, err
	}
	type order struct {
		w, d, o   int64
		delivered bool
		lines     int64
	}
	var orders []order
	at := 0
	for _, x := range ds {
		for o := int64(1); o <= max(x.next, 1); o++ {
			ord, pending := rows[at], rows[at+1][0] == 1
			at += 2
			exists := ord[oCustomer] != 0
			if o == x.next || x.next < 1 {
				if exists || pending {
					report("condition 2: district %d.%d has order %d at or past its next order id %d", x.w, x.d, o, x.next)
				}
				continue
			}
			delivered := o < x.cursor
			if !exists {
				report("condition 2: district %d.%d: order %d below its next order id %d does not exist", x.w, x.d, o, x.next)
				continue
			}
			if pending == delivered {
				report("condition 3: district %d.%d: order %d has a new-order row %t, delivery cursor %d", x.w, x.d, o, pending, x.cursor)
			}
			if (ord[oCarrier] != 0) != delivered {
				report("district %d.%d: order %d has carrier %d, delivery cursor %d", x.w, x.d, o, ord[oCarrier], x.cursor)
			}
			if ord[oLines] < 5 || ord[oLines] > maxOrderLines {
				report("district %d.%d: order %d has a line count of %d", x.w, x.d, o, ord[oLines])
				continue
			}
			orders = append(orders, order{x.w, x.d, o, delivered, ord[oLines]})
		}
	}

	// Order lines: each order's, and the one past its count, which must not exist.
	keys = keys[:0]
	for _, o := range orders {
		for n := int64(1); n <= o.lines+1; n++ {
			keys = append(keys, lineKey(o.w, o.d, o.o, n))
		}
	}
	if rows, err = read(keys, func(int) row { return absentLine }); err != nil {
		return nil, err
	}
	at = 0
	for _, o := range orders {
		for n := int64(1); n <= o.lines+1; n++ {
			line := rows[at]
			at++
			switch {
			case n > o.lines && line[lItem] != 0:
				report("condition 4: order %d.%d.%d has a line %d past its line count %d", o.w, o.d, o.o, n, o.lines)
			case n <= o.lines && line[lItem] == 0:
				report("condition 4: order %d.%d.%d lacks line %d of its %d", o.w, o.d, o.o, n, o.lines)
			case n <= o.lines && (line[lDelivered] == 1) != o.delivered:
				report("order %d.%d.%d: line %d delivered %d, order delivered %t", o.w, o.d, o.o, n, line[lDelivered], o.delivered)
			}
		}
	}

	r.mu.Lock()
	defer r.mu.Unlock()
	r.checked = TPCCChecked{Districts: len(ds), Orders: len(orders), OrderLines: len(keys) - len(orders)}
	if len(bad) > maxListedViolations {
		bad = append(bad[:maxListedViolations], fmt.Sprintf("and %d more", len(bad)-maxListedViolations))
	}
	r.violations = bad
	return nil, nil
}
