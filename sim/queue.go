package sim

// eventQueue holds the scheduled events in (at, seq) order: time first, then the order in which
// events were scheduled, which makes every run a pure function of its seed and inputs.
//
// Most events are client hops, which all take the same delay and so are scheduled in time
// order: pushInOrder keeps such events in a FIFO, at no cost, as long as they arrive in order.
// The others wait in a 4-ary min-heap, and pop takes the earlier of the two heads. The heap's keys
// are copied beside the event pointers, so that sifting compares contiguous memory instead of
// chasing a pointer per comparison; with a million events in flight (1024 nodes gossiping
// all-to-all) that is most of the simulator's time. Four children per node halve the heap's depth.
type eventQueue struct {
	heap []queued
	fifo []queued // fifo[head:] are waiting, in (at, seq) order
	head int
}

type queued struct {
	at  int64
	seq uint64
	e   *event
}

func (a *queued) before(b *queued) bool {
	return a.at < b.at || (a.at == b.at && a.seq < b.seq)
}

// len returns the number of waiting events.
func (q *eventQueue) len() int { return len(q.heap) + len(q.fifo) - q.head }

// inHeap reports whether the earliest waiting event is the heap's; q must not be empty.
func (q *eventQueue) inHeap() bool {
	return q.head == len(q.fifo) || (len(q.heap) > 0 && q.heap[0].before(&q.fifo[q.head]))
}

// nextAt returns the earliest waiting event's time; q must not be empty.
func (q *eventQueue) nextAt() int64 {
	if q.inHeap() {
		return q.heap[0].at
	}
	return q.fifo[q.head].at
}

// pushInOrder queues e in the FIFO if it comes after every event there (its seq is the highest
// yet, so a time no earlier than the last one's will do), else in the heap.
func (q *eventQueue) pushInOrder(e *event) {
	if n := len(q.fifo); n > q.head && e.at < q.fifo[n-1].at {
		q.push(e)
		return
	}
	if q.head == len(q.fifo) {
		q.fifo, q.head = q.fifo[:0], 0
	} else if q.head >= 1024 && 2*q.head >= len(q.fifo) { // reuse the space of popped entries
		q.fifo = q.fifo[:copy(q.fifo, q.fifo[q.head:])]
		q.head = 0
	}
	q.fifo = append(q.fifo, queued{at: e.at, seq: e.seq, e: e})
}

// push queues e in the heap.
func (q *eventQueue) push(e *event) {
	q.heap = append(q.heap, queued{at: e.at, seq: e.seq, e: e})
	h := q.heap
	i := len(h) - 1
	item := h[i]
	for i > 0 {
		parent := (i - 1) / 4
		if !item.before(&h[parent]) {
			break
		}
		h[i] = h[parent]
		i = parent
	}
	h[i] = item
}

// pop removes and returns the earliest waiting event; q must not be empty.
func (q *eventQueue) pop() *event {
	if !q.inHeap() {
		e := q.fifo[q.head].e
		q.fifo[q.head] = queued{}
		q.head++
		return e
	}
	h := q.heap
	top := h[0].e
	last := len(h) - 1
	item := h[last]
	h[last] = queued{}
	h = h[:last]
	q.heap = h
	if last == 0 {
		return top
	}
	i := 0
	for {
		first := 4*i + 1
		if first >= last {
			break
		}
		smallest := first
		for c := first + 1; c < min(first+4, last); c++ {
			if h[c].before(&h[smallest]) {
				smallest = c
			}
		}
		if !h[smallest].before(&item) {
			break
		}
		h[i] = h[smallest]
		i = smallest
	}
	h[i] = item
	return top
}
