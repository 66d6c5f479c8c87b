package repro

import (
	"bytes"
	"encoding/base64"
	"encoding/csv"
	"image/png"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/meridian-kv/meridian/tools/bench"
	"github.com/meridian-kv/meridian/topology"
)

// fakeReport is a hand-built report with one series of every kind.
func fakeReport() *Report {
	return &Report{
		Name:  "fake1.0",
		Title: "A fake experiment",
		Claims: []Claim{
			{Claim: "latency at A < 10 ms", Paper: "9 ms", Ours: "8.5 ms", Verdict: Matches},
			{Claim: "throughput doubles", Paper: "2×", Ours: "1.4×", Verdict: "differs by -0.6"},
		},
		Series: []Series{
			{Name: "latency", Kind: KindBars, Title: "Mean commit latency per datacenter", XLabel: "datacenter",
				YLabel: "mean commit latency (ms)", Categories: []string{"A", "B", "C"},
				Lines:      []Line{{Label: "helios-0", Y: []float64{5, 25, 15}}, {Label: "mf", Y: []float64{40, 60, 50}}},
				Bound:      []float64{5, 25, 15},
				BoundLabel: "MAO lower bound"},
			{Name: "cdf/A", Kind: KindCDF, Title: "Commit latency distribution at A", XLabel: "commit latency (ms)",
				YLabel: "fraction of transactions",
				Lines: []Line{{Label: "helios-0", X: []float64{1, 5, 9, 200}, Y: []float64{0, 0.5, 0.9, 1}},
					{Label: "mf", X: []float64{30, 40, 90}, Y: []float64{0, 0.5, 1}}}},
			{Name: "sweep", Kind: KindXY, Title: "Throughput against clients", XLabel: "clients per datacenter",
				YLabel: "committed transactions/s",
				Lines:  []Line{{Label: "total", X: []float64{1, 2, 4, 8}, Y: []float64{100, 190, 350, 400}}}},
			{Name: "sweep", Kind: KindXY, Title: "Throughput against clients, again", XLabel: "clients per datacenter",
				YLabel: "committed transactions/s", Lines: []Line{{Label: "total", X: []float64{1, 2}, Y: []float64{1, 2}}}},
		},
	}
}

// TestWriteDir writes a hand-built report and checks every file: the CSVs parse with the
// expected shape, the PNGs decode, and the pages hold the claims, the embedded plots and the
// links, with nothing fetched from elsewhere.
func TestWriteDir(t *testing.T) {
	dir := t.TempDir()
	r := fakeReport()
	if err := WriteDir(dir, []*Report{r}); err != nil {
		t.Fatal(err)
	}
	exp := filepath.Join(dir, "fake1.0")

	claims := outCSV(t, filepath.Join(exp, "claims.csv"))
	if len(claims) != 3 || strings.Join(claims[0], ",") != "claim,paper,ours,tolerance,verdict" || claims[1][0] != r.Claims[0].Claim {
		t.Errorf("claims.csv = %q", claims)
	}
	wantShape := map[string][2]int{ // rows, columns (header included)
		"latency": {4, 4}, // datacenter, helios-0, mf, MAO lower bound
		"cdf-A":   {8, 3}, // line, x, y
		"sweep":   {5, 3},
		"sweep-2": {3, 3},
	}
	for stem, shape := range wantShape {
		rows := outCSV(t, filepath.Join(exp, stem+".csv"))
		if len(rows) != shape[0] || len(rows[0]) != shape[1] {
			t.Errorf("%s.csv: %d rows of %d columns, want %d of %d: %q", stem, len(rows), len(rows[0]), shape[0], shape[1], rows)
		}
		data, err := os.ReadFile(filepath.Join(exp, stem+".png"))
		if err != nil {
			t.Fatal(err)
		}
		outPNG(t, stem+".png", data)
	}
	if rows := outCSV(t, filepath.Join(exp, "latency.csv")); strings.Join(rows[0], ",") != "datacenter,helios-0,mf,MAO lower bound" ||
		strings.Join(rows[2], ",") != "B,25,60,25" {
		t.Errorf("latency.csv = %q", rows)
	}

	page := outFile(t, filepath.Join(exp, "index.html"))
	for _, want := range []string{"A fake experiment", "latency at A &lt; 10 ms", "differs by -0.6", `class="differs"`,
		`class="matches"`, "1 of 2 claims match", `href="claims.csv"`, `href="cdf-A.csv"`, "Throughput against clients, again"} {
		if !strings.Contains(page, want) {
			t.Errorf("experiment page lacks %q", want)
		}
	}
	uris := regexp.MustCompile(`src="data:image/png;base64,([A-Za-z0-9+/=]+)"`).FindAllStringSubmatch(page, -1)
	if len(uris) != len(r.Series) {
		t.Errorf("%d embedded PNGs, want %d", len(uris), len(r.Series))
	}
	for _, m := range uris {
		data, err := base64.StdEncoding.DecodeString(m[1])
		if err != nil {
			t.Fatal(err)
		}
		outPNG(t, "embedded image", data)
	}
	for _, external := range []string{"http://", "https://", "<script", "<link"} {
		if strings.Contains(page, external) {
			t.Errorf("experiment page is not self-contained: it has %q", external)
		}
	}

	index := outFile(t, filepath.Join(dir, "index.html"))
	for _, want := range []string{`href="fake1.0/index.html"`, "A fake experiment", "1 / 2", "2 claims, 1 match"} {
		if !strings.Contains(index, want) {
			t.Errorf("index page lacks %q", want)
		}
	}
}

// TestSeriesFromResults builds the series of two short runs and checks they hold every
// datacenter's measurements, the lower bound and a CDF per datacenter, and that they plot.
func TestSeriesFromResults(t *testing.T) {
	opts := bench.Defaults()
	opts.Topology, _ = topology.Preset("table4.1")
	opts.ClientsPerDC, opts.DurationUs, opts.WarmupUs = 2, 2_000_000, 500_000
	results, err := runProtocols(Env{Seed: 1}, "test", opts, []string{"helios-0", "mf"})
	if err != nil {
		t.Fatal(err)
	}
	series := seriesFromResults(nil, results["helios-0"], results["mf"])
	byName := map[string]Series{}
	for _, s := range series {
		byName[s.Name] = s
		if _, err := renderPNG("test", s); err != nil {
			t.Errorf("%s: %v", s.Name, err)
		}
	}
	lat, ok := byName["latency"]
	if !ok || strings.Join(lat.Categories, ",") != "A,B,C" || len(lat.Lines) != 2 || lat.Lines[1].Label != "mf" {
		t.Fatalf("latency series = %+v", lat)
	}
	for i, dc := range results["mf"].res.DCs {
		if lat.Lines[1].Y[i] != dc.Latency.Mean || lat.Bound[i] != dc.LowerBoundMs {
			t.Errorf("%s: bar %.1f, bound %.1f; want %.1f and %.1f", dc.Name, lat.Lines[1].Y[i], lat.Bound[i], dc.Latency.Mean, dc.LowerBoundMs)
		}
	}
	for _, name := range []string{"throughput", "abort-rate", "cdf-A", "cdf-B", "cdf-C"} {
		if _, ok := byName[name]; !ok {
			t.Errorf("no %s series among %d", name, len(series))
		}
	}
	if cdf := byName["cdf-B"]; len(cdf.Lines) != 2 || cdf.Lines[0].Y[len(cdf.Lines[0].Y)-1] != 1 {
		t.Errorf("cdf-B = %+v", cdf)
	}
	sweep := sweepSeries("clients per datacenter", "clients", []float64{2, 2}, results["helios-0"], results["mf"])
	if len(sweep) != 2 || len(sweep[1].Lines) != 4 || sweep[1].Lines[3].Label != "total" || sweep[1].Lines[3].Y[1] != results["mf"].tps {
		t.Errorf("sweep series = %+v", sweep)
	}
}

func outFile(t *testing.T, path string) string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

func outCSV(t *testing.T, path string) [][]string {
	t.Helper()
	rows, err := csv.NewReader(strings.NewReader(outFile(t, path))).ReadAll()
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return rows
}

func outPNG(t *testing.T, name string, data []byte) {
	t.Helper()
	img, err := png.Decode(bytes.NewReader(data))
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	if b := img.Bounds(); b.Dx() != 1296 || b.Dy() != 648 {
		t.Errorf("%s is %d×%d, want 1296×648", name, b.Dx(), b.Dy())
	}
}
