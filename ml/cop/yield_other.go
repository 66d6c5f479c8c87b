//go:build !linux

package cop

import "runtime"

// osYield yields to the Go scheduler where sched_yield is not at hand.
func osYield() { runtime.Gosched() }
