package chariots

// backoff is the resend timeout of an acknowledged hop (filter → queue batches, queue →
// maintainer assignments): at least the configured period, and otherwise the acknowledgements'
// smoothed delay plus four times its deviation (Jacobson's estimator), doubled after every
// round of resends until a first-time send is acknowledged again (Karn's rule: a resent item's
// delay is ambiguous and not sampled), at most maxBackoffShift doublings. Without it, a hop
// whose acknowledgements queue behind a flood at the sender's own interface (a saturated
// filter, issue 14's capacity model) resends everything every period and the resends take
// the bandwidth the first sends needed.
type backoff struct {
	srttUs, rttvarUs int64
	shift            uint
}

// maxBackoffShift bounds the doublings: at most 64 times the estimated timeout.
const maxBackoffShift = 6

// acked takes the delay of an acknowledgement, sampled if the item was sent once.
func (b *backoff) acked(delayUs int64, sentOnce bool) {
	if !sentOnce {
		return
	}
	b.shift = 0
	if b.srttUs == 0 {
		b.srttUs, b.rttvarUs = delayUs, delayUs/2
		return
	}
	d := b.srttUs - delayUs
	if d < 0 {
		d = -d
	}
	b.rttvarUs += (d - b.rttvarUs) / 4
	b.srttUs += (delayUs - b.srttUs) / 8
}

// timeoutUs is how long an item waits for its acknowledgement before it is sent again.
func (b *backoff) timeoutUs(minUs int64) int64 {
	return max(minUs, b.srttUs+4*b.rttvarUs) << b.shift
}

// resent records a round of resends: the next timeout doubles.
func (b *backoff) resent() { b.shift = min(b.shift+1, maxBackoffShift) }
