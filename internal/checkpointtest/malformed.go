package checkpointtest

import (
	"fmt"
	"testing"

	"github.com/meridian-kv/meridian/protocol"
)

// Malformed restores damaged copies of ckpt, a checkpoint written by a replica with codec, each
// into a fresh replica from fresh (built with the same configuration, never started): every
// proper prefix must be refused with an error, and a copy with any one byte inverted must be
// refused or accepted without a panic (protocol.Checkpointer: a malformed checkpoint is an error,
// never a panic).
func Malformed(t *testing.T, ckpt []byte, codec protocol.Codec, fresh func() protocol.Checkpointer) {
	t.Helper()
	restore := func(b []byte) (err error) {
		defer func() {
			if p := recover(); p != nil {
				err = fmt.Errorf("panic: %v", p)
				t.Errorf("restoring a damaged checkpoint of %d bytes panicked: %v", len(b), p)
			}
		}()
		return fresh().RestoreCheckpoint(b, codec)
	}
	if err := restore(ckpt); err != nil {
		t.Fatalf("the undamaged checkpoint: %v", err)
	}
	for n := range len(ckpt) {
		if restore(ckpt[:n]) == nil {
			t.Errorf("the checkpoint's first %d of %d bytes were accepted", n, len(ckpt))
		}
	}
	for i := range ckpt {
		b := append([]byte(nil), ckpt...)
		b[i] ^= 0xff
		_ = restore(b)
	}
	if t.Failed() {
		t.FailNow()
	}
}
