package swarm

import (
	"slices"

	"github.com/meridian-kv/meridian/protocols/log/logsim"
)

// IsLog reports whether name is one of the shared log's swarms (logsim.SwarmNames: chariots,
// flstore, hyksos), which `meridian swarm` runs through logsim's driver and checks instead of
// bench's: every append answered once, every datacenter's log holding every record once in
// causal order, Hyksos's reads (CH-I checks), during the run and at its end.
func IsLog(name string) bool { return slices.Contains(logsim.SwarmNames, name) }

// CheckSeed runs seed of proto (a transactional protocol, or a shared log's swarm: IsLog) with o
// applied, checks it, and returns how many committed transactions the checker checked (appends
// answered, for the logs) and the failure, if any.
func CheckSeed(proto string, seed uint64, o Overrides) (committed int, err error) {
	if IsLog(proto) {
		opts, err := logsim.DrawFor(proto, seed)
		if err != nil {
			return 0, err
		}
		res, err := logsim.Run(o.applyLog(opts))
		return res.Appends, err
	}
	res, err := Check(proto, o.Apply(Draw(proto, seed)))
	if res != nil {
		committed = res.Checker.Committed
	}
	return committed, err
}

// applyLog is Apply for a log swarm's run: the elasticity and restart events, like the faults,
// are kept only if they happen by three quarters of a shortened run.
func (o Overrides) applyLog(opts logsim.Options) logsim.Options {
	if o.resize(&opts.Params, &opts.ClientsPerDC, &opts.DurationUs) {
		opts.Faults = o.faultsOver(opts.Faults)
		opts.Events = slices.DeleteFunc(slices.Clone(opts.Events), func(e logsim.Event) bool { return e.AtUs > o.DurationUs*3/4 })
	}
	return opts
}

// runSize returns the clients per datacenter and the run length of proto's seed under o.
func runSize(proto string, seed uint64, o Overrides) (clientsPerDC int, durationUs int64) {
	if IsLog(proto) {
		opts, _ := logsim.DrawFor(proto, seed)
		opts = o.applyLog(opts)
		return opts.ClientsPerDC, opts.DurationUs
	}
	opts := o.Apply(Draw(proto, seed))
	return opts.ClientsPerDC, opts.DurationUs
}
