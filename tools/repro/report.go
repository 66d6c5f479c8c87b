package repro

import (
	"bytes"
	"encoding/base64"
	"encoding/csv"
	"fmt"
	"html/template"
	"image/color"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/font"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/text"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
)

// WriteDir writes every report's files under dir (WriteExperiment) and the index page
// dir/index.html linking them (WriteIndex).
func WriteDir(dir string, reports []*Report) error {
	for _, r := range reports {
		if err := WriteExperiment(dir, r); err != nil {
			return err
		}
	}
	return WriteIndex(dir, reports)
}

// WriteExperiment writes r into dir/<r.Name>/: claims.csv (claim, paper, ours, tolerance,
// verdict), for
// every series <series>.csv and the plot <series>.png, and index.html, a self-contained page
// with the claims and the plots embedded.
func WriteExperiment(dir string, r *Report) error {
	expDir := filepath.Join(dir, fileStem(r.Name))
	if err := os.MkdirAll(expDir, 0o755); err != nil {
		return err
	}
	rows := [][]string{{"claim", "paper", "ours", "tolerance", "verdict"}}
	for _, c := range r.Claims {
		rows = append(rows, []string{c.Claim, c.Paper, c.Ours, c.Tolerance, c.Verdict})
	}
	if err := writeCSV(filepath.Join(expDir, "claims.csv"), rows); err != nil {
		return err
	}
	page := experimentPage{Report: r, Matched: matched(r), Summary: Summarize(r)}
	used := map[string]bool{"claims": true, "index": true}
	for _, s := range r.Series {
		stem := fileStem(s.Name)
		for i := 2; used[stem]; i++ {
			stem = fmt.Sprintf("%s-%d", fileStem(s.Name), i)
		}
		used[stem] = true
		if err := writeCSV(filepath.Join(expDir, stem+".csv"), seriesRows(s)); err != nil {
			return err
		}
		img, err := renderPNG(r.Name, s)
		if err != nil {
			return fmt.Errorf("%s: plotting %s: %w", r.Name, s.Name, err)
		}
		if err := os.WriteFile(filepath.Join(expDir, stem+".png"), img, 0o644); err != nil {
			return err
		}
		page.Figures = append(page.Figures, figure{Title: s.Title, CSV: stem + ".csv", PNG: stem + ".png",
			// An attribute rather than a template.URL, which html/template would still escape
			// ('+' as "&#43;"); base64 holds no character that needs it.
			Src: template.HTMLAttr(`src="data:image/png;base64,` + base64.StdEncoding.EncodeToString(img) + `"`)})
	}
	return writeTemplate(filepath.Join(expDir, "index.html"), experimentTemplate, page)
}

// WriteIndex writes dir/index.html, a page linking every report's page with the number of its
// claims that match.
func WriteIndex(dir string, reports []*Report) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	var page indexPage
	for _, r := range reports {
		e := indexEntry{Report: r, Dir: fileStem(r.Name), Matched: matched(r)}
		page.Experiments = append(page.Experiments, e)
		page.Matched += e.Matched
		page.Claims += len(r.Claims)
	}
	page.Summary = Summarize(reports...)
	return writeTemplate(filepath.Join(dir, "index.html"), indexTemplate, page)
}

func matched(r *Report) int {
	n := 0
	for _, c := range r.Claims {
		if c.Verdict == Matches {
			n++
		}
	}
	return n
}

// fileStem makes name safe as a file name: letters, digits, '.', '_' and '-' stay, anything
// else becomes '-'.
func fileStem(name string) string {
	stem := strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '.', r == '_', r == '-':
			return r
		}
		return '-'
	}, name)
	if strings.Trim(stem, ".") == "" {
		return "series"
	}
	return stem
}

// seriesRows is s as CSV rows. Bars are wide, a row per category and a column per line (and
// the bound); lines are long, a row per point: label, x, y.
func seriesRows(s Series) [][]string {
	num := func(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }
	if s.Kind == KindBars {
		head := []string{cmpOr(s.XLabel, "category")}
		for _, l := range s.Lines {
			head = append(head, l.Label)
		}
		if len(s.Bound) > 0 {
			head = append(head, cmpOr(s.BoundLabel, "bound"))
		}
		rows := [][]string{head}
		for i, cat := range s.Categories {
			row := []string{cat}
			for _, l := range s.Lines {
				row = append(row, num(at(l.Y, i)))
			}
			if len(s.Bound) > 0 {
				row = append(row, num(at(s.Bound, i)))
			}
			rows = append(rows, row)
		}
		return rows
	}
	rows := [][]string{{"line", cmpOr(s.XLabel, "x"), cmpOr(s.YLabel, "y")}}
	for _, l := range s.Lines {
		for i := range min(len(l.X), len(l.Y)) {
			rows = append(rows, []string{l.Label, num(l.X[i]), num(l.Y[i])})
		}
	}
	return rows
}

func cmpOr(s, fallback string) string {
	if s == "" {
		return fallback
	}
	return s
}

// at returns vs[i], or NaN past its end.
func at(vs []float64, i int) float64 {
	if i < len(vs) {
		return vs[i]
	}
	return math.NaN()
}

func writeCSV(path string, rows [][]string) error {
	var buf bytes.Buffer
	w := csv.NewWriter(&buf)
	if err := w.WriteAll(rows); err != nil {
		return err
	}
	return os.WriteFile(path, buf.Bytes(), 0o644)
}

// Plots are 9 × 4.5 inches at 144 dots per inch (1296 × 648 pixels).
const (
	plotWidth, plotHeight = 9 * vg.Inch, 4.5 * vg.Inch
	plotDPI               = 144
)

// palette is Tableau's ten colours, distinct also in print.
var palette = []color.Color{
	color.RGBA{0x4e, 0x79, 0xa7, 0xff}, color.RGBA{0xf2, 0x8e, 0x2b, 0xff}, color.RGBA{0xe1, 0x57, 0x59, 0xff},
	color.RGBA{0x76, 0xb7, 0xb2, 0xff}, color.RGBA{0x59, 0xa1, 0x4f, 0xff}, color.RGBA{0xed, 0xc9, 0x48, 0xff},
	color.RGBA{0xb0, 0x7a, 0xa1, 0xff}, color.RGBA{0xff, 0x9d, 0xa7, 0xff}, color.RGBA{0x9c, 0x75, 0x5f, 0xff},
	color.RGBA{0xba, 0xb0, 0xac, 0xff},
}

func colour(i int) color.Color { return palette[i%len(palette)] }

// dashes distinguish lines once the palette repeats.
func dashes(i int) []vg.Length {
	switch (i / len(palette)) % 3 {
	case 1:
		return []vg.Length{vg.Points(6), vg.Points(3)}
	case 2:
		return []vg.Length{vg.Points(2), vg.Points(2)}
	}
	return nil
}

func sans(points float64) font.Font {
	return font.Font{Typeface: "Liberation", Variant: "Sans", Size: vg.Points(points)}
}

// renderPNG draws s as a PNG titled with the experiment's name, the legend to the right of the
// plot.
func renderPNG(experiment string, s Series) ([]byte, error) {
	p := plot.New()
	p.X.Label.Text, p.Y.Label.Text = s.XLabel, s.YLabel
	for _, a := range []*plot.Axis{&p.X, &p.Y} {
		a.Label.TextStyle.Font = sans(12)
		a.Tick.Label.Font = sans(11)
		a.Tick.Marker = niceTicks{}
	}
	legend := plot.NewLegend()
	legend.Top, legend.Left = true, true
	legend.TextStyle.Font = sans(11)
	legend.Padding = vg.Points(3)
	var err error
	switch s.Kind {
	case KindBars:
		err = drawBars(p, &legend, s)
	case KindCDF, KindXY:
		err = drawLines(p, &legend, s)
	default:
		err = fmt.Errorf("unknown kind %q", s.Kind)
	}
	if err != nil {
		return nil, err
	}

	img := vgimg.NewWith(vgimg.UseWH(plotWidth, plotHeight), vgimg.UseDPI(plotDPI))
	pad := vg.Points(10)
	c := draw.Crop(draw.New(img), pad, -pad, pad, -pad)
	// The title spans the whole image (the plot's own would be centred over the plot alone,
	// and clipped there if long), shrunk if it would not fit.
	title := experiment + ": " + s.Title
	titleStyle := text.Style{Font: sans(15), Handler: plot.DefaultTextHandler, XAlign: draw.XCenter, YAlign: draw.YTop}
	for titleStyle.Width(title) > c.Size().X && titleStyle.Font.Size > vg.Points(8) {
		titleStyle.Font.Size -= vg.Points(0.5)
	}
	c.FillText(titleStyle, vg.Point{X: c.Center().X, Y: c.Max.Y}, title)
	c = draw.Crop(c, 0, 0, 0, -(titleStyle.Height(title) + pad))
	legendWidth := legend.Rectangle(c).Size().X
	p.Draw(draw.Crop(c, 0, -(legendWidth + pad), 0, 0))
	legend.Draw(draw.Crop(c, c.Size().X-legendWidth, 0, 0, 0))

	var buf bytes.Buffer
	if _, err := (vgimg.PngCanvas{Canvas: img}).WriteTo(&buf); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// drawBars draws grouped bars: category i spans x ∈ [i-0.4, i+0.4], split among the lines;
// the bound is a thick black segment across the group.
func drawBars(p *plot.Plot, legend *plot.Legend, s Series) error {
	if len(s.Categories) == 0 {
		return fmt.Errorf("no categories")
	}
	p.NominalX(s.Categories...)
	// At least three categories' room, so that one or two do not make bars as wide as the plot.
	mid, half := float64(len(s.Categories)-1)/2, math.Max(float64(len(s.Categories)), 3)/2
	p.X.Min, p.X.Max = mid-half, mid+half
	p.Y.Min = 0
	grid := plotter.NewGrid()
	grid.Vertical.Color = nil
	p.Add(grid)
	const group = 0.8
	width := group / float64(max(1, len(s.Lines)))
	for j, l := range s.Lines {
		var rings []plotter.XYer
		for i := range s.Categories {
			v := at(l.Y, i)
			if math.IsNaN(v) || v == 0 {
				continue // a zero bar's outline would only hide the axis
			}
			x0 := float64(i) - group/2 + float64(j)*width
			rings = append(rings, plotter.XYs{{X: x0, Y: 0}, {X: x0, Y: v}, {X: x0 + width, Y: v}, {X: x0 + width, Y: 0}})
		}
		poly, err := plotter.NewPolygon(rings...)
		if err != nil {
			return err
		}
		poly.Color = colour(j)
		poly.LineStyle = draw.LineStyle{Color: color.White, Width: vg.Points(0.5)}
		p.Add(poly)
		legend.Add(l.Label, poly)
	}
	var mark *plotter.Line
	for i, b := range s.Bound {
		if i >= len(s.Categories) || math.IsNaN(b) {
			continue
		}
		var err error
		mark, err = plotter.NewLine(plotter.XYs{{X: float64(i) - group/2 - 0.04, Y: b}, {X: float64(i) + group/2 + 0.04, Y: b}})
		if err != nil {
			return err
		}
		mark.LineStyle = draw.LineStyle{Color: color.Black, Width: vg.Points(2.5)}
		p.Add(mark)
	}
	if mark != nil {
		legend.Add(cmpOr(s.BoundLabel, "bound"), mark)
	}
	// Headroom above the tallest bar or mark.
	top := 0.0
	for _, l := range s.Lines {
		for _, v := range l.Y {
			if v > top { // false for NaN
				top = v
			}
		}
	}
	for _, b := range s.Bound {
		if b > top {
			top = b
		}
	}
	p.Y.Max = 1.08 * top
	if top == 0 {
		p.Y.Max = 1 // all zero: an axis from 0 up, not around 0
	}
	return nil
}

// drawLines draws every line of s, an xy line with its points marked; a CDF whose latencies
// span more than a factor of 8 gets a logarithmic x axis.
func drawLines(p *plot.Plot, legend *plot.Legend, s Series) error {
	grid := plotter.NewGrid()
	p.Add(grid)
	xMin, xMax := math.Inf(1), math.Inf(-1)
	for _, l := range s.Lines {
		for _, x := range l.X {
			xMin, xMax = math.Min(xMin, x), math.Max(xMax, x)
		}
	}
	if s.Kind == KindCDF {
		p.Y.Min, p.Y.Max = 0, 1
	}
	if s.LogX || s.Kind == KindCDF && xMin > 0 && xMax/xMin > 8 {
		p.X.Scale = plot.LogScale{}
		p.X.Tick.Marker = logTicks{}
	}
	if s.LogY {
		p.Y.Scale = plot.LogScale{}
		p.Y.Tick.Marker = logTicks{}
	}
	for j, l := range s.Lines {
		n := min(len(l.X), len(l.Y))
		if n == 0 {
			continue
		}
		xys := make(plotter.XYs, n)
		for i := range n {
			xys[i] = plotter.XY{X: l.X[i], Y: l.Y[i]}
		}
		line, err := plotter.NewLine(xys)
		if err != nil {
			return err
		}
		line.LineStyle = draw.LineStyle{Color: colour(j), Width: vg.Points(2), Dashes: dashes(j)}
		if s.Kind == KindCDF {
			// The points are quantiles: between two, the fraction is known only to be at least
			// the lower one's, so the curve steps up at each point instead of interpolating.
			line.StepStyle = plotter.PostStep
		}
		p.Add(line)
		thumbs := []plot.Thumbnailer{line}
		if s.Kind == KindXY {
			points, err := plotter.NewScatter(xys)
			if err != nil {
				return err
			}
			points.GlyphStyle = draw.GlyphStyle{Color: colour(j), Radius: vg.Points(3.5), Shape: draw.CircleGlyph{}}
			p.Add(points)
			thumbs = append(thumbs, points)
		}
		legend.Add(l.Label, thumbs...)
	}
	return nil
}

// niceTicks labels about six round values (multiples of 1, 2, 2.5 or 5 times a power of ten)
// of a linear axis, with a minor tick between each two.
type niceTicks struct{}

// Ticks implements plot.Ticker.
func (niceTicks) Ticks(lo, hi float64) []plot.Tick {
	if !(hi > lo) || math.IsInf(hi-lo, 0) {
		return plot.DefaultTicks{}.Ticks(lo, hi)
	}
	raw := (hi - lo) / 6
	mag := math.Pow10(int(math.Floor(math.Log10(raw))))
	step := 10 * mag
	for _, m := range []float64{1, 2, 2.5, 5} {
		if m*mag >= raw {
			step = m * mag
			break
		}
	}
	var ticks []plot.Tick
	for k := math.Ceil(lo / step * 2); k/2*step <= hi*(1+1e-12); k++ {
		t := plot.Tick{Value: k / 2 * step}
		if math.Mod(k, 2) == 0 {
			t.Label = strconv.FormatFloat(t.Value, 'g', 10, 64)
		}
		ticks = append(ticks, t)
	}
	return ticks
}

// logTicks labels 1, 2 and 5 of every decade of a logarithmic axis, with minor ticks between.
type logTicks struct{}

// Ticks implements plot.Ticker.
func (logTicks) Ticks(lo, hi float64) []plot.Tick {
	var ticks []plot.Tick
	for decade := math.Pow10(int(math.Floor(math.Log10(lo)))); decade <= hi; decade *= 10 {
		for i := 1; i < 10; i++ {
			v := decade * float64(i)
			if v < lo || v > hi {
				continue
			}
			t := plot.Tick{Value: v}
			if i == 1 || i == 2 || i == 5 {
				t.Label = strconv.FormatFloat(v, 'g', 4, 64)
			}
			ticks = append(ticks, t)
		}
	}
	return ticks
}

type figure struct {
	Title, CSV, PNG string
	Src             template.HTMLAttr // src="data:image/png;base64,…", the PNG embedded
}

type experimentPage struct {
	*Report
	Matched int
	Summary Summary
	Figures []figure
}

type indexEntry struct {
	*Report
	Dir     string
	Matched int
}

type indexPage struct {
	Experiments     []indexEntry
	Matched, Claims int
	Summary         Summary
}

func writeTemplate(path string, t *template.Template, data any) error {
	var buf bytes.Buffer
	if err := t.Execute(&buf, data); err != nil {
		return err
	}
	return os.WriteFile(path, buf.Bytes(), 0o644)
}

const pageStyle = `
body { font-family: -apple-system, "Segoe UI", Helvetica, Arial, sans-serif; max-width: 1040px; margin: 2em auto; padding: 0 1em; color: #222; }
h1 { font-size: 1.5em; margin-bottom: 0.2em; }
h2 { font-size: 1.15em; margin-top: 2em; }
.sub { color: #666; margin-top: 0; }
table { border-collapse: collapse; width: 100%; font-size: 0.92em; }
th, td { text-align: left; padding: 0.45em 0.7em; border-bottom: 1px solid #ddd; vertical-align: top; }
th { background: #f4f4f4; }
.matches { color: #1a7f37; font-weight: 600; }
.differs { color: #cf222e; font-weight: 600; }
.partial { color: #9a6700; font-weight: 600; }
figure { margin: 1.5em 0; }
figure img { width: 100%; border: 1px solid #eee; }
figcaption { color: #555; font-size: 0.9em; }
a { color: #0969da; }
`

var experimentTemplate = template.Must(template.New("experiment").Parse(`<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>{{.Name}}: {{.Title}}</title>
<style>` + pageStyle + `</style>
</head>
<body>
<p><a href="../index.html">← all experiments</a></p>
<h1>{{.Name}}: {{.Title}}</h1>
<p class="sub"><span class="{{if eq .Matched (len .Claims)}}matches{{else if eq .Matched 0}}differs{{else}}partial{{end}}">{{.Matched}} of {{len .Claims}} claims match</span> · {{.Summary}} · <a href="claims.csv">claims.csv</a></p>
<table>
<tr><th>Claim</th><th>Paper</th><th>Ours</th><th>Tolerance</th><th>Verdict</th></tr>
{{range .Claims}}<tr><td>{{.Claim}}</td><td>{{.Paper}}</td><td>{{.Ours}}</td><td>{{.Tolerance}}</td><td class="{{if eq .Verdict "matches"}}matches{{else}}differs{{end}}">{{.Verdict}}</td></tr>
{{end}}</table>
<h2>Measurements</h2>
{{range .Figures}}<figure>
<img {{.Src}} alt="{{.Title}}">
<figcaption>{{.Title}} · data: <a href="{{.CSV}}">{{.CSV}}</a> · image: <a href="{{.PNG}}">{{.PNG}}</a></figcaption>
</figure>
{{else}}<p>This experiment records no measurements to plot.</p>
{{end}}</body>
</html>
`))

var indexTemplate = template.Must(template.New("index").Parse(`<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>Meridian: reproduced experiments</title>
<style>` + pageStyle + `</style>
</head>
<body>
<h1>Meridian: reproduced experiments</h1>
<p class="sub">{{len .Experiments}} experiments · {{.Summary}}</p>
<table>
<tr><th>Experiment</th><th>Title</th><th>Claims matching</th></tr>
{{range .Experiments}}<tr><td><a href="{{.Dir}}/index.html">{{.Name}}</a></td><td>{{.Title}}</td><td class="{{if eq .Matched (len .Claims)}}matches{{else if eq .Matched 0}}differs{{else}}partial{{end}}">{{.Matched}} / {{len .Claims}}</td></tr>
{{end}}</table>
</body>
</html>
`))
