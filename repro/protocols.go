package repro

// The experiments compare the baselines and the transactional-causal systems too; they register
// themselves when imported.
import (
	_ "github.com/meridian-kv/meridian/ec"
	_ "github.com/meridian-kv/meridian/eiger"
	_ "github.com/meridian-kv/meridian/fastccs"
	_ "github.com/meridian-kv/meridian/paxos"
	_ "github.com/meridian-kv/meridian/rc"
	_ "github.com/meridian-kv/meridian/twopc"
	_ "github.com/meridian-kv/meridian/wren"
)
