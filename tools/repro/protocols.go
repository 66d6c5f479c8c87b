package repro

// The experiments compare the baselines and the transactional-causal systems too; they register
// themselves when imported.
import (
	_ "github.com/meridian-kv/meridian/protocols/baseline/paxos"
	_ "github.com/meridian-kv/meridian/protocols/baseline/rc"
	_ "github.com/meridian-kv/meridian/protocols/baseline/twopc"
	_ "github.com/meridian-kv/meridian/protocols/tcc/ec"
	_ "github.com/meridian-kv/meridian/protocols/tcc/eiger"
	_ "github.com/meridian-kv/meridian/protocols/tcc/fastccs"
	_ "github.com/meridian-kv/meridian/protocols/tcc/wren"
)
