package wire

// Append appends with f, an Append function of this or another package (a transaction, a
// protocol's log record), recording its error under what.
func (w *Writer) Append(what string, f func(dst []byte) ([]byte, error)) {
	b, err := f(w.b)
	if err != nil {
		w.Fail(what, "%v", err)
		return
	}
	w.b = b
}

// Decode reads with f, a decode function of this or another package, unless an error was
// recorded before, and records f's error.
func (r *Reader) Decode(f func(d *Decoder) error) {
	if r.err == nil {
		r.err = f(&r.d)
	}
}

// MaxCheckpointCount bounds a list in a replica's checkpoint (protocol.Checkpointer): pools,
// logs and tables that a replica holds in memory, far larger than any one message's.
const MaxCheckpointCount = 1 << 30
