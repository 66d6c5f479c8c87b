package tcc

import "container/heap"

// Waiting holds items until a clock (a vector-clock entry, a stable time) reaches each one's
// threshold: a min-heap by threshold, so that raising the clock releases exactly the items it
// unblocks, whatever order they arrived in. FastCCS and Wren keep their committed-but-not-yet-
// visible writes in one to measure visibility lag.
type Waiting[T any] struct {
	h waitHeap[T]
}

// Add holds item until the clock reaches at.
func (w *Waiting[T]) Add(at int64, item T) { heap.Push(&w.h, waiting[T]{at: at, item: item}) }

// Len is the number of items held.
func (w *Waiting[T]) Len() int { return len(w.h) }

// Release removes every item whose threshold is at most clock and hands each to fn, lowest
// threshold first.
func (w *Waiting[T]) Release(clock int64, fn func(T)) {
	for len(w.h) > 0 && w.h[0].at <= clock {
		fn(heap.Pop(&w.h).(waiting[T]).item)
	}
}

type waiting[T any] struct {
	at   int64
	item T
}

// waitHeap implements heap.Interface for Waiting.
type waitHeap[T any] []waiting[T]

func (h waitHeap[T]) Len() int           { return len(h) }
func (h waitHeap[T]) Less(i, j int) bool { return h[i].at < h[j].at }
func (h waitHeap[T]) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *waitHeap[T]) Push(x any)        { *h = append(*h, x.(waiting[T])) }
func (h *waitHeap[T]) Pop() any {
	old := *h
	x := old[len(old)-1]
	old[len(old)-1] = waiting[T]{}
	*h = old[:len(old)-1]
	return x
}
