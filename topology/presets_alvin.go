package topology

// The ALVIN evaluation's sites (spec alvin.md §7.1): seven EC2 regions, named as in the spec's
// table: VA us-east-1, OR us-west-2, IE eu-west-1, SP sa-east-1, TK ap-northeast-1,
// SG ap-southeast-1, SY ap-southeast-2.
var alvinSites = []string{"VA", "OR", "IE", "SP", "TK", "SG", "SY"}

// The spec's 3- and 5-site configurations (§7.1 "Site sets").
var (
	alvinSites3 = []string{"VA", "IE", "TK"}
	alvinSites5 = []string{"VA", "OR", "IE", "TK", "SG"}
)

func init() {
	presets["aws-7"] = aws7
	presets["aws-5"] = func() *Topology { return alvinSubset(aws7(), alvinSites5, "aws-5") }
	presets["aws-3"] = func() *Topology { return alvinSubset(aws7(), alvinSites3, "aws-3") }
	presets["alvin-paper-7"] = alvinPaper7
}

// aws7 is the "aws-7" preset: measured RTTs between the seven sites. Each entry is the mean of
// the two directions' average ping RTT, and each standard deviation the mean of the two
// directions' mdev, from the AWS measurements of 2020-06-05 published with the fantoch project
// (github.com/vitorenesduarte/fantoch, latency_aws/2020_06_05; MIT / Apache-2.0), a copy of which
// is topology/testdata/aws-2020-06-05.csv (TestAWSPresetsMatchMeasurements recomputes them).
func aws7() *Topology {
	return &Topology{
		Name: "aws-7",
		DCs:  append([]string(nil), alvinSites...),
		RTTMs: [][]float64{
			{0, 72.5025, 70.5045, 113.0245, 152.4245, 235.7595, 198.0325},
			{72.5025, 0, 127.2795, 180.283, 100.862, 162.7345, 138.5275},
			{70.5045, 127.2795, 0, 183.620, 204.4385, 186.589, 253.6555},
			{113.0245, 180.283, 183.620, 0, 267.883, 338.123, 308.812},
			{152.4245, 100.862, 204.4385, 267.883, 0, 77.0345, 104.0745},
			{235.7595, 162.7345, 186.589, 338.123, 77.0345, 0, 90.4625},
			{198.0325, 138.5275, 253.6555, 308.812, 104.0745, 90.4625, 0},
		},
		StdDevMs: [][]float64{
			{0, 2.4325, 0.2565, 1.9215, 0.4575, 4.8425, 0.334},
			{2.4325, 0, 0.6155, 0.3485, 0.316, 0.306, 0.4885},
			{0.2565, 0.6155, 0, 0.371, 5.5515, 0.4225, 0.3535},
			{1.9215, 0.3485, 0.371, 0, 0.430, 0.762, 0.491},
			{0.4575, 0.316, 5.5515, 0.430, 0, 2.1105, 0.4255},
			{4.8425, 0.306, 0.4225, 0.762, 2.1105, 0, 0.358},
			{0.334, 0.4885, 0.3535, 0.491, 0.4255, 0.358, 0},
		},
	}
}

// alvinPaper7 is the "alvin-paper-7" preset: the approximate EC2 RTTs the ALVIN spec assumes
// (alvin.md §7.1, circa 2014–2015, no measured deviations), for comparison with aws-7. The spec's
// ±5% uniform jitter is not modelled: the standard deviations are zero.
func alvinPaper7() *Topology {
	return &Topology{
		Name: "alvin-paper-7",
		DCs:  append([]string(nil), alvinSites...),
		RTTMs: [][]float64{
			{0, 100, 90, 120, 160, 230, 210},
			{100, 0, 170, 180, 100, 170, 160},
			{90, 170, 0, 190, 220, 180, 280},
			{120, 180, 190, 0, 260, 330, 310},
			{160, 100, 220, 260, 0, 70, 110},
			{230, 170, 180, 330, 70, 0, 170},
			{210, 160, 280, 310, 110, 170, 0},
		},
		StdDevMs: zeros(len(alvinSites)),
	}
}

// alvinSubset is Subset of a preset known to be valid, renamed.
func alvinSubset(t *Topology, dcs []string, name string) *Topology {
	s, err := Subset(t, dcs)
	if err != nil {
		panic("topology: preset " + name + ": " + err.Error())
	}
	s.Name = name
	return s
}
