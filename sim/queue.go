package sim

// eventQueue is a 4-ary min-heap of events ordered by (at, seq): time first, then the order in
// which events were scheduled, which makes every run a pure function of its seed and inputs.
// The keys are copied into the heap beside the event pointers, so that sifting compares
// contiguous memory instead of chasing a pointer per comparison; with a million events in flight
// (1024 nodes gossiping all-to-all) that is most of the simulator's time. Four children per node
// halve the heap's depth.
type eventQueue []queued

type queued struct {
	at  int64
	seq uint64
	e   *event
}

func (a *queued) before(b *queued) bool {
	return a.at < b.at || (a.at == b.at && a.seq < b.seq)
}

func (q *eventQueue) push(e *event) {
	*q = append(*q, queued{at: e.at, seq: e.seq, e: e})
	h := *q
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

func (q *eventQueue) pop() *event {
	h := *q
	top := h[0].e
	last := len(h) - 1
	item := h[last]
	h[last] = queued{}
	h = h[:last]
	*q = h
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
