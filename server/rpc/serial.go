package rpc

import "sync"

// serial runs callbacks one at a time, in the order they were queued, on a goroutine of its own
// (started when there is work, ended once it is closed and drained), so that code driven by
// callbacks (a client session, a protocol's client library) is never run concurrently. It
// also counts the RPCs whose callbacks are not queued yet, so that closing can wait for them.
type serial struct {
	mu      sync.Mutex
	wake    *sync.Cond // signalled when the queue grows or the serial closes
	queue   []func()   // callbacks waiting to run; queue[head:] are pending
	head    int
	looping bool // the callback goroutine is running
	closed  bool
	rpcs    sync.WaitGroup // RPCs whose callbacks are not queued yet
	// idle hands an RPC to a worker goroutine waiting for one; done, closed with the serial,
	// ends the waiting workers.
	idle chan func()
	done chan struct{}
}

func newSerial() *serial {
	s := &serial{idle: make(chan func()), done: make(chan struct{})}
	s.wake = sync.NewCond(&s.mu)
	return s
}

// enqueue queues f to run on the callback goroutine.
func (s *serial) enqueue(f func()) {
	s.mu.Lock()
	s.enqueueLocked(f)
	s.mu.Unlock()
}

// goRPC runs rpc on a worker goroutine and queues the callback it returns; once the serial is
// closed it queues closed instead, without running rpc. Workers outlive their RPC and wait for
// the next until the serial closes, so that as many run as RPCs were ever outstanding at once,
// and an RPC rarely pays for a new goroutine whose stack grows, by copying, to the depth of a
// gRPC call (about 8% of a bench client's CPU without them).
func (s *serial) goRPC(rpc func() func(), closed func()) {
	if !s.begin(closed) {
		return
	}
	job := func() {
		defer s.rpcs.Done()
		s.enqueue(rpc())
	}
	select {
	case s.idle <- job:
	default:
		go s.worker(job)
	}
}

// begin counts an RPC about to start (s.rpcs; the caller calls s.rpcs.Done once its callback
// is queued) and reports true; once the serial is closed it queues closed instead and reports
// false.
func (s *serial) begin(closed func()) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		s.enqueueLocked(closed)
		return false
	}
	s.rpcs.Add(1)
	return true
}

// isClosed reports whether the serial is closed.
func (s *serial) isClosed() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.closed
}

// worker runs job, then every RPC handed to it while it waits, until the serial closes.
func (s *serial) worker(job func()) {
	for {
		job()
		select {
		case job = <-s.idle:
		case <-s.done:
			return
		}
	}
}

// enqueueLocked queues f, starting the callback goroutine if needed.
func (s *serial) enqueueLocked(f func()) {
	s.queue = append(s.queue, f)
	if !s.looping {
		s.looping = true
		go s.loop()
	} else {
		s.wake.Signal()
	}
}

// loop runs queued callbacks one at a time. It lives until the serial is closed and the queue
// is empty; a callback queued after that (the reply to a call made after closing) starts it
// again.
func (s *serial) loop() {
	s.mu.Lock()
	for {
		for s.head == len(s.queue) {
			s.queue, s.head = s.queue[:0], 0
			if s.closed {
				s.looping = false
				s.mu.Unlock()
				return
			}
			s.wake.Wait()
		}
		f := s.queue[s.head]
		s.queue[s.head] = nil
		s.head++
		s.mu.Unlock()
		f()
		s.mu.Lock()
	}
}

// close marks the serial closed and reports whether it was open. The caller then cancels its
// RPCs and waits for s.rpcs.
func (s *serial) close() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return false
	}
	s.closed = true
	close(s.done)
	s.wake.Broadcast()
	return true
}
