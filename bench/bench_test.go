package bench

import (
	"testing"
)

// BenchmarkSimulatorDefaultRun measures the simulator on the main job's setting (aws-helios,
// 12 clients per datacenter, T-YCSB defaults) for 10 virtual seconds of helios-0, and reports
// events per wall second and the ratio of virtual to wall time.
func BenchmarkSimulatorDefaultRun(b *testing.B) {
	opts := Defaults()
	opts.DurationUs = 10_000_000
	opts.WarmupUs = 1_000_000
	for _, p := range []string{"helios-0", "mf"} {
		b.Run(p, func(b *testing.B) {
			var events uint64
			var virtualUs int64
			for b.Loop() {
				res, err := Run(opts, p)
				if err != nil {
					b.Fatal(err)
				}
				events += res.Sim.Events
				virtualUs += res.VirtualUs
			}
			wall := b.Elapsed().Seconds()
			b.ReportMetric(float64(events)/wall, "events/s")
			b.ReportMetric(float64(virtualUs)/1e6/wall, "virtual/wall")
		})
	}
}
