package topology

func init() { presets[COPFig61] = copFig61 }

// COPFig61 names the deployment of COP's global-scale mode (seed 000 Fig. 6.1, spec cop.md X5):
// a central learning datacenter in Ohio and four collection datacenters in North America.
const COPFig61 = "cop-fig6.1"

// copFig61 builds COPFig61. The source gives no latencies; these are typical round trips between
// the AWS regions us-east-2 (central), us-east-1, us-west-1, us-west-2 and ca-central-1 (our
// assumption, in milliseconds, without jitter).
func copFig61() *Topology {
	return &Topology{
		Name: COPFig61,
		DCs:  []string{"central", "virginia", "california", "oregon", "montreal"},
		RTTMs: [][]float64{
			{0, 12, 52, 50, 25},
			{12, 0, 62, 70, 15},
			{52, 62, 0, 22, 78},
			{50, 70, 22, 0, 65},
			{25, 15, 78, 65, 0},
		},
		StdDevMs: zeros(5),
	}
}
