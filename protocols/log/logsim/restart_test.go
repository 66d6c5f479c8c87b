package logsim

import (
	"testing"
)

// TestStagesRestartEmpty runs a swarm seed with a restart of each stateless or rebuildable stage
// (batcher, filter, sender, receiver, the coordinating queue and the last queue: the token
// rebuilt; spec 5.13) in both datacenters while clients append:
// every run must pass its checks, every answered append in every datacenter's log once.
func TestStagesRestartEmpty(t *testing.T) {
	for _, kind := range []EventKind{RestartBatcher, RestartFilter, RestartSender, RestartReceiver, RestartQueue, RestartLastQueue} {
		o := Draw(3)
		o.Events = nil
		for i, at := range []int64{100_000, 250_000} {
			o.Events = append(o.Events, Event{Kind: kind, DC: i % o.Topology.N(), AtUs: at})
		}
		res, err := Run(o)
		if err != nil {
			t.Fatalf("%s: %v\n%s", eventNames[kind], err, o)
		}
		if res.Restarts != 2 {
			t.Fatalf("%s: %d restarts, want 2", eventNames[kind], res.Restarts)
		}
		t.Logf("%s: %d appends, %d retries", eventNames[kind], res.Appends, res.Retries)
	}
}
