package repro

import (
	"encoding/json"
	"math"
	"strings"
	"testing"
)

// TestClaimConstructors: each records its numbers, tolerance and verdict; a bound is tested as
// stated and carries no relative error.
func TestClaimConstructors(t *testing.T) {
	for _, tc := range []struct {
		c              Claim
		tolerance      string
		match          bool
		relErr         float64 // -1: none
		paperV, oursV  float64
		verdictContain string
	}{
		{within("a", 100, 110, 15, "ms"), "±15 ms", true, 0.1, 100, 110, ""},
		{within("b", 100, 120, 15, "ms"), "±15 ms", false, 0.2, 100, 120, "+20 ms"},
		{withinRel("c", 200, 180, 0.15, "ops/s"), "±15% of it (±30 ops/s)", true, 0.1, 200, 180, ""},
		{atLeast("d", 14, 2.06, "s"), "as stated", false, -1, 14, 2.06, "-11.94 s"},
		{atMost("e", 10, 4.7, "%"), "as stated", true, -1, 10, 4.7, ""},
		{inRange("f", 20, 50, 0, 40.9, "%"), "as stated", true, 0, 50, 40.9, ""},
		{inRange("g", 20, 50, 0, 10, "%"), "as stated", false, 0.5, 20, 10, "-10%"},
	} {
		c := tc.c
		if c.Tolerance != tc.tolerance || (c.Verdict == Matches) != tc.match || !strings.Contains(c.Verdict, tc.verdictContain) {
			t.Errorf("%s: tolerance %q verdict %q, want %q, match %v", c.Claim, c.Tolerance, c.Verdict, tc.tolerance, tc.match)
		}
		if *c.PaperValue != tc.paperV || *c.OursValue != tc.oursV {
			t.Errorf("%s: values %v, %v", c.Claim, *c.PaperValue, *c.OursValue)
		}
		switch {
		case tc.relErr < 0 && c.RelError != nil:
			t.Errorf("%s: a bound has relative error %v", c.Claim, *c.RelError)
		case tc.relErr >= 0 && (c.RelError == nil || *c.RelError < tc.relErr-1e-9 || *c.RelError > tc.relErr+1e-9):
			t.Errorf("%s: relative error %v, want %v", c.Claim, c.RelError, tc.relErr)
		}
	}
}

// TestSummarize: claims, matches and the median relative error of the quantified matches.
func TestSummarize(t *testing.T) {
	r := &Report{Claims: []Claim{
		within("a", 100, 110, 15, "ms"), within("b", 100, 101, 15, "ms"), within("c", 100, 104, 15, "ms"),
		within("d", 100, 102, 15, "ms"), within("e", 100, 200, 15, "ms"), holds("f", "x", "y", true),
	}}
	s := Summarize(r)
	if s.Claims != 6 || s.Matches != 5 || s.Quantified != 4 || s.MedianRelError < 0.03-1e-9 || s.MedianRelError > 0.03+1e-9 {
		t.Fatalf("summary %+v, want 6 claims, 5 matches, 4 quantified, median 3%%", s)
	}
	if got := s.String(); got != "6 claims, 5 match; median relative error 3.0% (4 quantified matches)" {
		t.Errorf("String() = %q", got)
	}
}

// TestWriteDoc fills a source's actions with a run's tables, and refuses an experiment the run
// lacks.
func TestWriteDoc(t *testing.T) {
	r := fakeReport()
	r.Claims[0].Tolerance = "±1 ms"
	var b strings.Builder
	src := "# Doc\n\n{{summary \"fake1.0\"}}\n\n## fake\n\n{{claims \"fake1.0\"}}\n\nTotal: {{total}}. Line: {{line \"fake1.0\"}}. " +
		"Before: {{tally \"old\" \"fake1.0\"}}, all {{tallyAll \"old\"}}; {{tally \"old\" \"e9.9\"}}.\n"
	old := &Report{Name: "fake1.0", Claims: []Claim{{Verdict: Matches}, {Verdict: Matches}, {Verdict: Differs}}}
	if err := WriteDoc(&b, src, []*Report{r}, map[string][]*Report{"old": {old}}, false); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"| fake1.0 | A fake experiment | 2 | 1 | — |", "| latency at A < 10 ms | 9 ms | 8.5 ms | ±1 ms | matches |",
		"| throughput doubles | 2× | 1.4× | — | differs by -0.6 |", "**fake1.0: 2 claims, 1 match; no quantified match.**",
		"Total: 2 claims, 1 match; no quantified match.", "Before: 2 of 3, all 2 of 3; not run."} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("document lacks %q:\n%s", want, b.String())
		}
	}
	for _, src := range []string{`{{claims "e9.9"}}`, `{{tally "" "e9.9"}}`, `{{tally "new" "fake1.0"}}`, `{{tallyAll "new"}}`} {
		if err := WriteDoc(&b, src, []*Report{r}, nil, false); err == nil {
			t.Errorf("%s gave no error", src)
		}
	}
	b.Reset()
	if err := WriteDoc(&b, `{{claims "e9.9"}} {{tally "" "e9.9"}}`, []*Report{r}, nil, true); err != nil ||
		b.String() != "*"+notMeasured+".* 0 of 0" {
		t.Errorf("partial: %q, %v", b.String(), err)
	}
}

// TestSeriesTable: a run's series survive the JSON (a missing value as null, read back as NaN)
// and {{table}} renders them, bars by category and lines by x value, "—" where a value is
// missing; a series the run lacks is an error naming it.
func TestSeriesTable(t *testing.T) {
	r := &Report{Name: "x", Title: "X", Series: []Series{
		{Name: "latency", Kind: KindBars, XLabel: "datacenter", Categories: []string{"V", "O"},
			Lines: []Line{{Label: "helios-0", Y: Floats{79.21, 19.7}}, {Label: "mf", Y: Floats{258.9, math.NaN()}}},
			Bound: Floats{68, 10}, BoundLabel: "MAO"},
		{Name: "sweep", Kind: KindXY, XLabel: "clients", Lines: []Line{
			{Label: "a", X: Floats{15, 45}, Y: Floats{1.234, 2000.4}}, {Label: "b", X: Floats{45}, Y: Floats{0.5}}}},
	}}
	data, err := json.Marshal(Run{Experiments: []*Report{r}})
	if err != nil {
		t.Fatal(err)
	}
	var back Run
	if err := json.Unmarshal(data, &back); err != nil {
		t.Fatal(err)
	}
	if y := back.Experiments[0].Series[0].Lines[1].Y; len(y) != 2 || y[0] != 258.9 || !math.IsNaN(y[1]) {
		t.Fatalf("round trip: %v", y)
	}
	var b strings.Builder
	if err := WriteDoc(&b, `{{table "x" "latency"}}`+"\n"+`{{table "x" "sweep"}}`, back.Experiments, nil, false); err != nil {
		t.Fatal(err)
	}
	want := "| datacenter | helios-0 | mf | MAO |\n| --- | --- | --- | --- |\n| V | 79.2 | 259 | 68 |\n| O | 19.7 | — | 10 |\n" +
		"| clients | a | b |\n| --- | --- | --- |\n| 15 | 1.23 | — |\n| 45 | 2000 | 0.5 |"
	if b.String() != want {
		t.Fatalf("got\n%s\nwant\n%s", b.String(), want)
	}
	if err := WriteDoc(&b, `{{table "x" "nope"}}`, back.Experiments, nil, false); err == nil || !strings.Contains(err.Error(), `no series "nope"`) {
		t.Fatalf("a missing series: %v", err)
	}
	b.Reset()
	others := map[string][]*Report{"old": back.Experiments}
	if err := WriteDoc(&b, `{{tableIn "old" "x" "sweep"}}`, nil, others, false); err != nil || b.String() != want[strings.Index(want, "| clients"):] {
		t.Fatalf("tableIn: %q, %v", b.String(), err)
	}
	if err := WriteDoc(&b, `{{tableIn "new" "x" "sweep"}}`, nil, others, false); err == nil {
		t.Fatal("tableIn accepted a run that is not there")
	}
}
