package bench

import (
	"testing"
)

// BenchmarkSimulator measures the simulator on the main job's setting (aws-helios, 12 clients
// per datacenter, T-YCSB defaults), 10 virtual seconds per protocol, and reports events per
// wall second and the ratio of virtual to wall time.
func BenchmarkSimulator(b *testing.B) {
	opts := Defaults()
	opts.DurationUs = 10_000_000
	opts.WarmupUs = 1_000_000
	for _, p := range opts.Protocols {
		b.Run(p, func(b *testing.B) { measure(b, opts, []string{p}) })
	}
}

// BenchmarkDefaultRun is the whole main job, `meridian bench` without flags: five protocols,
// 60 virtual seconds each. Run it with -benchtime 1x.
func BenchmarkDefaultRun(b *testing.B) {
	opts := Defaults()
	measure(b, opts, opts.Protocols)
}

func measure(b *testing.B, opts Options, protocols []string) {
	var events uint64
	var virtualUs int64
	for b.Loop() {
		for _, p := range protocols {
			res, err := Run(opts, p)
			if err != nil {
				b.Fatal(err)
			}
			if !res.Checker.OK {
				b.Fatalf("%s: %s", p, res.Checker.Summary())
			}
			events += res.Sim.Events
			virtualUs += res.VirtualUs
		}
	}
	wall := b.Elapsed().Seconds()
	b.ReportMetric(float64(events)/wall, "events/s")
	b.ReportMetric(float64(virtualUs)/1e6/wall, "virtual/wall")
}
