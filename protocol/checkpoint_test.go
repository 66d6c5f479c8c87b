package protocol

import "testing"

type plainReplica struct{}

func (plainReplica) Start()                        {}
func (plainReplica) HandleMessage(NodeID, Message) {}
func (plainReplica) HandleRequest(Request)         {}
func (plainReplica) HandleTimer(TimerID)           {}

type checkpointing struct{ plainReplica }

func (checkpointing) AppendCheckpoint(dst []byte, _ Codec) ([]byte, error) { return dst, nil }
func (checkpointing) RestoreCheckpoint([]byte, Codec) error                { return nil }

type wrapping struct {
	checkpointing
	inner Replica
}

func (w wrapping) Inner() Replica { return w.inner }

// TestCheckpoints: a replica writes checkpoints if it implements Checkpointer, and a wrapper only
// if the replica it wraps does too.
func TestCheckpoints(t *testing.T) {
	for _, c := range []struct {
		r    Replica
		want bool
	}{
		{plainReplica{}, false},
		{checkpointing{}, true},
		{wrapping{inner: checkpointing{}}, true},
		{wrapping{inner: plainReplica{}}, false},
		{wrapping{inner: wrapping{inner: plainReplica{}}}, false},
	} {
		if got := Checkpoints(c.r); got != c.want {
			t.Errorf("Checkpoints(%T wrapping %v) = %v, want %v", c.r, c.r, got, c.want)
		}
	}
}
