package repro

// The experiments compare the baselines too; they register themselves when imported.
import (
	_ "github.com/meridian-kv/meridian/paxos"
	_ "github.com/meridian-kv/meridian/rc"
	_ "github.com/meridian-kv/meridian/twopc"
)
