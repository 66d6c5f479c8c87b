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
}

func newSerial() *serial {
	s := &serial{}
	s.wake = sync.NewCond(&s.mu)
	return s
}

// enqueue queues f to run on the callback goroutine.
func (s *serial) enqueue(f func()) {
	s.mu.Lock()
	s.enqueueLocked(f)
	s.mu.Unlock()
}

// goRPC runs rpc on a goroutine of its own and queues the callback it returns; once the serial
// is closed it queues closed instead, without running rpc.
func (s *serial) goRPC(rpc func() func(), closed func()) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		s.enqueueLocked(closed)
		return
	}
	s.rpcs.Add(1)
	go func() {
		defer s.rpcs.Done()
		s.enqueue(rpc())
	}()
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
	s.wake.Broadcast()
	return true
}
