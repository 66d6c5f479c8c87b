package cop

import "fmt"

// Schedule assigns every transaction of a plan to one worker ahead of time, as one queue per
// worker. COP's waits point only from later- to earlier-planned transactions, which rules out
// deadlock only if every worker takes its transactions in increasing plan order (spec §5.4):
// then the smallest unfinished transaction is always running and never waits. NewSchedule
// therefore rejects a queue out of plan order, e.g. worker 1 with [T3, T1] and worker 2 with
// [T4, T2] when T3 needs T2 and T4 needs T1.
type Schedule struct {
	queues [][]TxnID
	n      int
}

// NewSchedule returns the schedule of the given per-worker queues over the transactions 1…n:
// each must appear in exactly one queue, and every queue must be in increasing plan order.
func NewSchedule(n int, queues [][]TxnID) (*Schedule, error) {
	seen := make([]bool, n+1)
	for w, q := range queues {
		for i, id := range q {
			switch {
			case id == 0 || int(id) > n:
				return nil, fmt.Errorf("cop: worker %d's queue has T%d, outside T1…T%d", w, id, n)
			case seen[id]:
				return nil, fmt.Errorf("cop: T%d is in two queues", id)
			case i > 0 && id < q[i-1]:
				return nil, fmt.Errorf("cop: worker %d's queue has T%d before T%d: out of plan order, which can deadlock (spec §5.4)", w, q[i-1], id)
			}
			seen[id] = true
		}
	}
	for id := 1; id <= n; id++ {
		if !seen[id] {
			return nil, fmt.Errorf("cop: T%d is in no queue", id)
		}
	}
	return &Schedule{queues: queues, n: n}, nil
}

// Striped returns the static schedule that deals the transactions 1…n to workers in chunks of
// chunk consecutive ones, round robin (spec §5.4's "static striping", chunk 1 being i mod W).
func Striped(n, workers, chunk int) *Schedule {
	queues := make([][]TxnID, workers)
	for start := 0; start < n; start += chunk {
		w := (start / chunk) % workers
		for id := start + 1; id <= min(start+chunk, n); id++ {
			queues[w] = append(queues[w], TxnID(id))
		}
	}
	return &Schedule{queues: queues, n: n}
}
