package tcc

// Timeout is a client library's transaction timeout. Arming the transport's timer with the
// closure that handles the timeout would keep the transaction's state (its keys, its answers)
// alive until the timer fires, long after the transaction finished: at twenty thousand
// transactions a second and a timeout of seconds, that was most of a simulation's heap. A
// Timeout keeps the handler itself and arms the transport's timer with a closure that holds only
// a sequence number, so at most one transaction per client stays reachable. The zero Timeout is
// ready to use.
type Timeout struct {
	armed  uint64 // sequence number of the last Arm
	handle func()
}

// Arm runs handle on tr's loop after delayUs, unless Arm is called again first: a later Arm
// replaces the pending handler (the libraries arm one timeout per attempt, and a later attempt
// makes an earlier one's timeout moot). The transport's timer fires at the same time either way.
func (t *Timeout) Arm(tr Transport, delayUs int64, handle func()) {
	t.armed++
	seq := t.armed
	t.handle = handle
	tr.After(delayUs, func() {
		if t.armed != seq {
			return
		}
		h := t.handle
		t.handle = nil
		h()
	})
}
