package swarm

import (
	"maps"
	"math/rand/v2"
	"strconv"

	"github.com/meridian-kv/meridian/protocol"
	"github.com/meridian-kv/meridian/protocols/smr/batch"
	"github.com/meridian-kv/meridian/tools/bench"
)

// InstanceBatching switches a seed's run of a state-machine replication protocol (ALVIN,
// EPaxos, Multi-Paxos) to instance batching (batch_mode=instance, spec alvin.md §5.3) with a
// window drawn from the seed, 1 to 60 ms, so that batches of one and of many transactions both
// occur. It has the shape of RunWith's and checkpointtest.RoundTripWith's adjust; what it sets is
// in the run's printed parameters.
func InstanceBatching(seed uint64, opts *bench.Options) {
	r := rand.New(rand.NewPCG(seed, 0x6261746368))
	opts.Params = maps.Clone(opts.Params)
	if opts.Params == nil {
		opts.Params = protocol.Params{}
	}
	opts.Params[batch.ParamMode] = batch.ModeInstance
	opts.Params[batch.ParamWindow] = strconv.Itoa(1 + r.IntN(60))
}
