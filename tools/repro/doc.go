package repro

import (
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
	"text/template"
)

// Run is the JSON form of a whole `meridian repro` run: every experiment's report and their
// tally.
type Run struct {
	Experiments []*Report `json:"experiments"`
	Summary     Summary   `json:"summary"`
}

// DocSource is where the hand-written text of docs/REPRODUCTION.md lives, relative to the
// repository's root: WriteDoc fills it with the run's tables.
const DocSource = "docs/REPRODUCTION.src.md"

// WriteDoc writes the reproduction document: source (DocSource's text) with every action
// replaced by the figures of reports. The source is a text/template with these actions:
//
//	{{claims "e3.1"}}          e3.1's claims as a Markdown table, then its summary line
//	{{summary "e3.1" "e3.2"}}  a table with a row per experiment: claims, matches, median error
//	{{line "e3.1"}}            e3.1's summary line alone
//	{{total}}                  the summary line of every report
//	{{tally "old" "e3.1"}}     "m of n": e3.1's matches and claims in the run others["old"]
//	                           ("" for reports), "not run" if that run lacks it
//	{{tallyAll "old"}}         the same over every experiment of that run
//	{{table "e4.1" "latency"}} e4.1's series "latency" as a Markdown table (seriesTable)
//	{{tableIn "aligned" "e3.2" "latency"}}  the same from the run others["aligned"]
//
// others are other runs to compare with (another revision, another setting), by label.
// Naming an experiment or a run that is missing is an error, so that the document never
// shows a table that was not measured, unless partial: then an experiment missing from reports
// is shown as not measured (a run cut short), and counts as no claims.
func WriteDoc(w io.Writer, source string, reports []*Report, others map[string][]*Report, partial bool) error {
	runs := map[string]map[string]*Report{"": {}}
	for _, r := range reports {
		runs[""][r.Name] = r
	}
	for label, rs := range others {
		runs[label] = map[string]*Report{}
		for _, r := range rs {
			runs[label][r.Name] = r
		}
	}
	getIn := func(label, name string) (*Report, error) {
		run, ok := runs[label]
		if !ok {
			return nil, fmt.Errorf("no run labelled %q to compare with", label)
		}
		if r, ok := run[name]; ok {
			return r, nil
		}
		return nil, fmt.Errorf("experiment %q was not run (run %q)", name, label)
	}
	get := func(name string) (*Report, error) {
		r, err := getIn("", name)
		if err != nil && partial {
			return &Report{Name: name, Title: notMeasured}, nil
		}
		return r, err
	}
	funcs := template.FuncMap{
		"claims": func(name string) (string, error) {
			r, err := get(name)
			if err != nil {
				return "", err
			}
			if r.Title == notMeasured {
				return "*" + notMeasured + ".*", nil
			}
			var b strings.Builder
			b.WriteString("| Claim | Paper | Ours | Tolerance | Verdict |\n|---|---|---|---|---|\n")
			for _, c := range r.Claims {
				fmt.Fprintf(&b, "| %s | %s | %s | %s | %s |\n", mdCell(c.Claim), mdCell(c.Paper), mdCell(c.Ours),
					mdCell(cmpOr(c.Tolerance, "—")), mdCell(c.Verdict))
			}
			fmt.Fprintf(&b, "\n**%s: %s.**", r.Name, Summarize(r))
			return b.String(), nil
		},
		"summary": func(names ...string) (string, error) {
			var b strings.Builder
			b.WriteString("| Experiment | What | Claims | Match | Median relative error of the quantified matches |\n|---|---|---|---|---|\n")
			var rs []*Report
			for _, n := range names {
				r, err := get(n)
				if err != nil {
					return "", err
				}
				rs = append(rs, r)
				s := Summarize(r)
				fmt.Fprintf(&b, "| %s | %s | %d | %d | %s |\n", r.Name, mdCell(r.Title), s.Claims, s.Matches, medianCell(s))
			}
			s := Summarize(rs...)
			fmt.Fprintf(&b, "| **all %d** | | **%d** | **%d** | %s |", len(rs), s.Claims, s.Matches, medianCell(s))
			return b.String(), nil
		},
		"line": func(name string) (string, error) {
			r, err := get(name)
			if err != nil {
				return "", err
			}
			return Summarize(r).String(), nil
		},
		"table": func(name, series string) (string, error) {
			r, err := get(name)
			if err != nil {
				return "", err
			}
			return reportTable(r, series)
		},
		"tableIn": func(label, name, series string) (string, error) {
			r, err := getIn(label, name)
			if err != nil {
				return "", err
			}
			return reportTable(r, series)
		},
		"total": func() string { return Summarize(reports...).String() },
		"tally": func(label, name string) (string, error) {
			if _, ok := runs[label][name]; !ok && label != "" && runs[label] != nil {
				return "not run", nil // a comparison may cover part of the experiments
			}
			r, err := getIn(label, name)
			if label == "" {
				r, err = get(name)
			}
			if err != nil {
				return "", err
			}
			s := Summarize(r)
			return fmt.Sprintf("%d of %d", s.Matches, s.Claims), nil
		},
		"tallyAll": func(label string) (string, error) {
			run, ok := runs[label]
			if !ok {
				return "", fmt.Errorf("no run labelled %q to compare with", label)
			}
			var rs []*Report
			for _, r := range run {
				rs = append(rs, r)
			}
			s := Summarize(rs...)
			return fmt.Sprintf("%d of %d", s.Matches, s.Claims), nil
		},
	}
	t, err := template.New("doc").Funcs(funcs).Option("missingkey=error").Parse(source)
	if err != nil {
		return fmt.Errorf("%s: %w", DocSource, err)
	}
	return t.Execute(w, nil)
}

// reportTable is r's series named series as a Markdown table (seriesTable), or the mark of an
// experiment a partial run lacks; a series r does not have is an error.
func reportTable(r *Report, series string) (string, error) {
	if r.Title == notMeasured {
		return "*" + notMeasured + ".*", nil
	}
	for _, sr := range r.Series {
		if sr.Name == series {
			return seriesTable(sr), nil
		}
	}
	return "", fmt.Errorf("experiment %q has no series %q in the run (a run saved before series were kept in the JSON?)", r.Name, series)
}

// notMeasured stands for an experiment missing from a partial run (WriteDoc).
const notMeasured = "Not measured in the run this page was generated from"

// medianCell is a summary's median relative error for a table cell.
func medianCell(s Summary) string {
	if s.Quantified == 0 {
		return "—"
	}
	return fmt.Sprintf("%.1f%% (of %d)", 100*s.MedianRelError, s.Quantified)
}

// mdCell makes s safe inside a Markdown table cell.
func mdCell(s string) string {
	return strings.NewReplacer("|", `\|`, "\n", " ").Replace(s)
}

// seriesTable is s as a Markdown table: bars with a row per category and a column per line
// (and the bound); lines (KindXY, KindCDF) with a row per x value and a column per line. A cell
// without a value is "—". Values keep three significant figures, at least the units.
func seriesTable(s Series) string {
	var b strings.Builder
	row := func(cells ...string) {
		b.WriteString("| " + strings.Join(cells, " | ") + " |\n")
	}
	head := []string{mdCell(cmpOr(s.XLabel, "category"))}
	for _, l := range s.Lines {
		head = append(head, mdCell(l.Label))
	}
	if s.Kind == KindBars && len(s.Bound) > 0 {
		head = append(head, mdCell(cmpOr(s.BoundLabel, "bound")))
	}
	row(head...)
	row(slices.Repeat([]string{"---"}, len(head))...)
	if s.Kind == KindBars {
		for i, cat := range s.Categories {
			cells := []string{mdCell(cat)}
			for _, l := range s.Lines {
				cells = append(cells, tableNumber(at(l.Y, i)))
			}
			if len(s.Bound) > 0 {
				cells = append(cells, tableNumber(at(s.Bound, i)))
			}
			row(cells...)
		}
		return strings.TrimSuffix(b.String(), "\n")
	}
	var xs []float64
	for _, l := range s.Lines {
		xs = append(xs, l.X...)
	}
	slices.Sort(xs)
	for _, x := range slices.Compact(xs) {
		cells := []string{tableNumber(x)}
		for _, l := range s.Lines {
			y := math.NaN()
			if i := slices.Index(l.X, x); i >= 0 {
				y = at(l.Y, i)
			}
			cells = append(cells, tableNumber(y))
		}
		row(cells...)
	}
	return strings.TrimSuffix(b.String(), "\n")
}

// tableNumber formats a measurement for seriesTable: "—" if missing, whole numbers from 100 on,
// otherwise three significant figures.
func tableNumber(v float64) string {
	switch {
	case math.IsNaN(v) || math.IsInf(v, 0):
		return "—"
	case math.Abs(v) >= 100 || v == math.Trunc(v):
		return strconv.FormatFloat(v, 'f', 0, 64)
	}
	return strconv.FormatFloat(v, 'g', 3, 64)
}
