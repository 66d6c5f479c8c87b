package topology

import (
	"encoding/csv"
	"math"
	"os"
	"slices"
	"strconv"
	"testing"
)

// alvinRegions maps the ALVIN presets' site names to the AWS regions of the measurements.
var alvinRegions = map[string]string{
	"VA": "us-east-1", "OR": "us-west-2", "IE": "eu-west-1", "SP": "sa-east-1",
	"TK": "ap-northeast-1", "SG": "ap-southeast-1", "SY": "ap-southeast-2",
}

// readRTTCSV reads the measurement file: per directed region pair, the average RTT and mdev.
func readRTTCSV(t *testing.T, path string) map[[2]string][2]float64 {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rows, err := csv.NewReader(f).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"src", "dst", "rtt_min_ms", "rtt_avg_ms", "rtt_max_ms", "rtt_mdev_ms"}; !slices.Equal(rows[0], want) {
		t.Fatalf("header %v, want %v", rows[0], want)
	}
	out := map[[2]string][2]float64{}
	for _, r := range rows[1:] {
		avg, err1 := strconv.ParseFloat(r[3], 64)
		mdev, err2 := strconv.ParseFloat(r[5], 64)
		if err1 != nil || err2 != nil {
			t.Fatalf("row %v: %v %v", r, err1, err2)
		}
		out[[2]string{r[0], r[1]}] = [2]float64{avg, mdev}
	}
	return out
}

// TestAWSPresetsMatchMeasurements recomputes every entry of aws-3, aws-5 and aws-7 from the
// measurement file (the mean of the two directions' average RTT and mdev) and checks the site
// sets of spec §7.1.
func TestAWSPresetsMatchMeasurements(t *testing.T) {
	m := readRTTCSV(t, "testdata/aws-2020-06-05.csv")
	for name, sites := range map[string][]string{"aws-3": alvinSites3, "aws-5": alvinSites5, "aws-7": alvinSites} {
		topo := mustPreset(t, name)
		if topo.Name != name || !slices.Equal(topo.DCs, sites) {
			t.Fatalf("%s: name %q sites %v, want %v", name, topo.Name, topo.DCs, sites)
		}
		if warnings, err := topo.Validate(); err != nil {
			t.Fatalf("%s: %v", name, err)
		} else {
			t.Logf("%s: %d triangle warnings", name, len(warnings))
		}
		for i, a := range topo.DCs {
			for j, b := range topo.DCs {
				if i == j {
					continue
				}
				ab, ok1 := m[[2]string{alvinRegions[a], alvinRegions[b]}]
				ba, ok2 := m[[2]string{alvinRegions[b], alvinRegions[a]}]
				if !ok1 || !ok2 {
					t.Fatalf("%s-%s not measured in both directions", a, b)
				}
				if want := (ab[0] + ba[0]) / 2; math.Abs(topo.RTTMs[i][j]-want) > 1e-9 {
					t.Errorf("%s: RTT %s-%s = %g, want %g", name, a, b, topo.RTTMs[i][j], want)
				}
				if want := (ab[1] + ba[1]) / 2; math.Abs(topo.StdDevMs[i][j]-want) > 1e-9 {
					t.Errorf("%s: std dev %s-%s = %g, want %g", name, a, b, topo.StdDevMs[i][j], want)
				}
			}
		}
	}
}

// TestAlvinPaperPreset checks alvin-paper-7 against spec §7.1's table and its mean RTTs
// (the spec's Paxos-LO/HI table: VA 151.7, OR 146.7, IE 188.3, SP 231.7, TK 153.3, SG 191.7,
// SY 206.7).
func TestAlvinPaperPreset(t *testing.T) {
	topo := mustPreset(t, "alvin-paper-7")
	if _, err := topo.Validate(); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		a, b string
		rtt  float64
	}{{"VA", "OR", 100}, {"VA", "SP", 120}, {"IE", "SY", 280}, {"SP", "SG", 330}, {"TK", "SG", 70}, {"SG", "SY", 170}} {
		i, _ := topo.Index(c.a)
		j, _ := topo.Index(c.b)
		if topo.RTTMs[i][j] != c.rtt || topo.RTTMs[j][i] != c.rtt {
			t.Errorf("RTT %s-%s = %g/%g, want %g", c.a, c.b, topo.RTTMs[i][j], topo.RTTMs[j][i], c.rtt)
		}
	}
	want := []float64{151.7, 146.7, 188.3, 231.7, 153.3, 191.7, 206.7}
	for i := range topo.DCs {
		sum := 0.0
		for _, v := range topo.RTTMs[i] {
			sum += v
		}
		if mean := sum / float64(topo.N()-1); math.Abs(mean-want[i]) > 0.05 {
			t.Errorf("%s: mean RTT %.2f, want %.1f", topo.DCs[i], mean, want[i])
		}
	}
}
