package report

import (
	"fmt"
	"html"
	"math"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/llmprof/llmprof/attribution"
)

// The HTML report's charts are inline SVG written here, so the page needs no
// script library and opens offline. Colours are the Okabe–Ito palette, which
// stays distinguishable under the common colour-vision deficiencies; lines
// also differ by dash pattern so that a greyscale print still tells them
// apart.

// palette is Okabe–Ito without its yellow (too faint on white for lines),
// which comes last for areas.
var palette = []string{"#0072B2", "#E69F00", "#009E73", "#CC79A7", "#56B4E9", "#D55E00", "#000000", "#F0E442"}

var dashes = []string{"", "6 3", "2 2", "8 3 2 3", "4 4", "1 3", "10 4", "3 6"}

// areaPalette extends palette for charts with more parts than it has
// colours (the per-token buckets): the added colours were picked, greedily
// from Kelly's and Tol's sets, to keep every pair — noGPUColor included —
// at least 16 CIEDE2000 apart (TestAreaPaletteDistinct checks ≥ 15).
var areaPalette = append(append([]string(nil), palette...), "#332288", "#BE0032", "#654522", "#2B3D26", "#999933", "#666666", "#F99379", "#875692",
	// Three more for the stage.* and unattributed buckets of token
	// intervals outside any engine step.
	"#008695", "#882255", "#117733")

// noGPUColor is the grey of time the input cannot split (a step without GPU
// data): not a cause, so not a colour of its own.
const noGPUColor = "#BBBBBB"

func seriesColor(i int) string { return palette[i%len(palette)] }
func areaColor(i int) string   { return areaPalette[i%len(areaPalette)] }

// bucketColor gives each per-token bucket a fixed colour, distinct from
// every other bucket's, by its place in attribution.Buckets.
func bucketColor(name string) string {
	if name == attribution.BucketStepUnsplit.String() {
		return noGPUColor
	}
	i := 0
	for _, b := range attribution.Buckets() {
		if b == attribution.BucketStepUnsplit {
			continue
		}
		if b.String() == name {
			return areaColor(i)
		}
		i++
	}
	return areaColor(i)
}
func seriesDash(i int) string { return dashes[i%len(dashes)] }

// axisScale maps data values to pixels, linearly or on a log10 scale.
type axisScale struct {
	lo, hi float64 // data range (positive for log)
	p0, p1 float64 // pixel range
	log    bool
}

func (s axisScale) at(v float64) float64 {
	a, b, x := s.lo, s.hi, v
	if s.log {
		a, b, x = math.Log10(a), math.Log10(b), math.Log10(math.Max(v, s.lo))
	}
	if b == a {
		return (s.p0 + s.p1) / 2
	}
	return s.p0 + (x-a)/(b-a)*(s.p1-s.p0)
}

// ticks returns tick values: 1-2-5 steps within each decade on a log axis,
// a "nice" step on a linear one.
func (s axisScale) ticks() []float64 {
	var out []float64
	if s.log {
		// 1-2-5 in each decade when there are few decades; only the powers
		// of ten when labels would crowd.
		mult := []float64{1, 2, 5}
		if math.Log10(s.hi/s.lo) > 2.5 {
			mult = []float64{1}
		}
		for e := math.Floor(math.Log10(s.lo)); e <= math.Ceil(math.Log10(s.hi)); e++ {
			for _, m := range mult {
				if v := m * math.Pow(10, e); v >= s.lo*0.999 && v <= s.hi*1.001 {
					out = append(out, v)
				}
			}
		}
		return out
	}
	step := niceStep((s.hi - s.lo) / 5)
	if step <= 0 || math.IsNaN(step) || math.IsInf(step, 0) {
		return []float64{s.lo}
	}
	for v := math.Ceil(s.lo/step) * step; v <= s.hi+step*1e-9; v += step {
		out = append(out, v)
	}
	return out
}

func niceStep(raw float64) float64 {
	if raw <= 0 {
		return 0
	}
	e := math.Pow(10, math.Floor(math.Log10(raw)))
	for _, m := range []float64{1, 2, 2.5, 5, 10} {
		if m*e >= raw {
			return m * e
		}
	}
	return 10 * e
}

// tickLabel prints a tick value compactly.
func tickLabel(v float64) string {
	a := math.Abs(v)
	switch {
	case a == 0:
		return "0"
	case a >= 1e6:
		return strconv.FormatFloat(v/1e6, 'f', -1, 64) + "M"
	case a >= 1e3:
		return strconv.FormatFloat(v/1e3, 'f', -1, 64) + "k"
	case a < 0.01:
		return strconv.FormatFloat(v, 'g', 2, 64)
	}
	return strconv.FormatFloat(math.Round(v*1000)/1000, 'f', -1, 64)
}

// svgDoc accumulates one chart.
type svgDoc struct {
	b    strings.Builder
	w, h float64
}

func newSVG(w, h float64, label string) *svgDoc {
	d := &svgDoc{w: w, h: h}
	fmt.Fprintf(&d.b, `<svg xmlns="http://www.w3.org/2000/svg" class="chart" viewBox="0 0 %g %g" width="%g" height="%g" role="img" aria-label="%s"><title>%s</title>`,
		w, h, w, h, esc(label), esc(label))
	return d
}

func (d *svgDoc) String() string { return d.b.String() + "</svg>" }

func (d *svgDoc) text(x, y float64, anchor, class, s string) {
	fmt.Fprintf(&d.b, `<text x="%.1f" y="%.1f" text-anchor="%s" class="%s">%s</text>`, x, y, anchor, class, esc(s))
}

func (d *svgDoc) rect(x, y, w, h float64, fill, tip string) {
	if w <= 0 || h <= 0 {
		return
	}
	fmt.Fprintf(&d.b, `<rect x="%.2f" y="%.2f" width="%.2f" height="%.2f" fill="%s">`, x, y, w, h, fill)
	if tip != "" {
		fmt.Fprintf(&d.b, `<title>%s</title>`, esc(tip))
	}
	d.b.WriteString(`</rect>`)
}

// frame draws the axes, grid and tick labels of a plot area.
func (d *svgDoc) frame(x, y axisScale, xLabel, yLabel string) {
	top, bottom := y.p1, y.p0
	left, right := x.p0, x.p1
	d.b.WriteString(`<g class="grid">`)
	for _, t := range y.ticks() {
		py := y.at(t)
		fmt.Fprintf(&d.b, `<line x1="%.1f" x2="%.1f" y1="%.1f" y2="%.1f"/>`, left, right, py, py)
		d.text(left-4, py+3.5, "end", "tick", tickLabel(t))
	}
	for _, t := range x.ticks() {
		px := x.at(t)
		fmt.Fprintf(&d.b, `<line x1="%.1f" x2="%.1f" y1="%.1f" y2="%.1f"/>`, px, px, top, bottom)
		d.text(px, bottom+13, "middle", "tick", tickLabel(t))
	}
	d.b.WriteString(`</g>`)
	fmt.Fprintf(&d.b, `<path class="axis" d="M%.1f %.1fV%.1fH%.1f"/>`, left, top, bottom, right)
	d.text((left+right)/2, bottom+28, "middle", "label", xLabel)
	fmt.Fprintf(&d.b, `<text class="label" text-anchor="middle" transform="translate(%.1f %.1f) rotate(-90)">%s</text>`, left-38, (top+bottom)/2, esc(yLabel))
}

// lineSeries is one line of a line chart; NaN values break the line.
type lineSeries struct {
	Name  string
	X, Y  []float64
	Step  bool // draw as a step function (a CDF)
	Width float64
}

// legend draws a legend for series names at the top right of the plot.
func (d *svgDoc) legend(x, y float64, names []string, colorOf func(int) string, dashOf func(int) string, swatch string) {
	for i, n := range names {
		py := y + float64(i)*14
		if swatch == "line" {
			fmt.Fprintf(&d.b, `<line x1="%.1f" x2="%.1f" y1="%.1f" y2="%.1f" stroke="%s" stroke-width="2" stroke-dasharray="%s"/>`, x, x+18, py-4, py-4, colorOf(i), dashOf(i))
		} else {
			d.rect(x, py-9, 12, 10, colorOf(i), "")
		}
		d.text(x+22, py, "start", "legend", n)
	}
}

// lineChart draws lines on a shared frame. yMax 0 means the data's maximum.
func lineChart(label, xLabel, yLabel string, series []lineSeries, xLog bool, yMax float64) string {
	const w, h = 520.0, 260.0
	const left, right, top, bottom = 52.0, 172.0, 12.0, 36.0
	xlo, xhi, yhi := math.Inf(1), math.Inf(-1), yMax
	for _, s := range series {
		for i, x := range s.X {
			if math.IsNaN(x) || math.IsNaN(s.Y[i]) || (xLog && x <= 0) {
				continue
			}
			xlo, xhi = math.Min(xlo, x), math.Max(xhi, x)
			if yMax == 0 {
				yhi = math.Max(yhi, s.Y[i])
			}
		}
	}
	d := newSVG(w, h, label)
	if math.IsInf(xlo, 1) {
		d.text(w/2, h/2, "middle", "label", "no data")
		return d.String()
	}
	if xLog && xhi/xlo < 20 {
		xLog = false
	}
	if !xLog {
		xlo = math.Min(xlo, 0)
	}
	if xhi == xlo {
		xhi = xlo + 1
	}
	if yhi <= 0 {
		yhi = 1
	}
	xs := axisScale{lo: xlo, hi: xhi, p0: left, p1: w - right, log: xLog}
	ys := axisScale{lo: 0, hi: yhi, p0: h - bottom, p1: top}
	d.frame(xs, ys, xLabel, yLabel)
	names := make([]string, len(series))
	for i, s := range series {
		names[i] = s.Name
		var path strings.Builder
		pen := false
		for j, x := range s.X {
			y := s.Y[j]
			if math.IsNaN(x) || math.IsNaN(y) || (xLog && x <= 0) {
				pen = false
				continue
			}
			px, py := xs.at(x), ys.at(y)
			switch {
			case !pen:
				fmt.Fprintf(&path, "M%.1f %.1f", px, py)
			case s.Step:
				fmt.Fprintf(&path, "H%.1fV%.1f", px, py)
			default:
				fmt.Fprintf(&path, "L%.1f %.1f", px, py)
			}
			pen = true
		}
		width := s.Width
		if width == 0 {
			width = 1.6
		}
		fmt.Fprintf(&d.b, `<path class="series" fill="none" stroke="%s" stroke-width="%g" stroke-dasharray="%s" d="%s"><title>%s</title></path>`,
			seriesColor(i), width, seriesDash(i), path.String(), esc(s.Name))
	}
	d.legend(w-right+10, top+10, names, seriesColor, seriesDash, "line")
	return d.String()
}

// stackRow is one bar of a 100% stacked bar chart.
type stackRow struct {
	Label  string
	Note   string // right of the bar (e.g. the group's size)
	Shares []float64
}

// stackedBars draws horizontal 100% bars, one segment per part.
func stackedBars(label string, parts []string, colors []string, rows []stackRow) string {
	const w = 720.0
	const left, right, barH, gap = 150.0, 90.0, 16.0, 6.0
	bw := w - left - right
	// Legend entries flow left to right, wrapping at the bar's width; their
	// width is estimated from the text (about 6 px a character at 10.5 px).
	type spot struct{ x, y float64 }
	spots := make([]spot, len(parts))
	lx, line := 0.0, 0
	for j, p := range parts {
		ew := 22 + 6*float64(len([]rune(p))) + 12
		if lx > 0 && lx+ew > bw {
			lx, line = 0, line+1
		}
		spots[j] = spot{lx, float64(line) * 16}
		lx += ew
	}
	h := 8 + float64(len(rows))*(barH+gap) + 20 + float64(line+1)*16
	d := newSVG(w, h, label)
	for i, r := range rows {
		y := 8 + float64(i)*(barH+gap)
		d.text(left-6, y+barH-4, "end", "label", r.Label)
		x := left
		for j, s := range r.Shares {
			segW := s * bw
			d.rect(x, y, segW, barH, colors[j%len(colors)], fmt.Sprintf("%s · %s: %s", r.Label, parts[j], pct(s)))
			if segW > 34 {
				d.text(x+segW/2, y+barH-4, "middle", textClass(colors[j%len(colors)]), pct(s))
			}
			x += segW
		}
		fmt.Fprintf(&d.b, `<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="none" class="outline"/>`, left, y, bw, barH)
		d.text(w-right+6, y+barH-4, "start", "tick", r.Note)
	}
	ly := 8 + float64(len(rows))*(barH+gap) + 14
	for j, p := range parts {
		x, y := left+spots[j].x, ly+spots[j].y
		d.rect(x, y-9, 12, 10, colors[j%len(colors)], "")
		d.text(x+16, y, "start", "legend", p)
	}
	return d.String()
}

// barItem is one bar of a horizontal bar chart.
type barItem struct {
	Label string
	Value float64 // drawn length, relative to the largest
	Text  string  // printed after the bar
	Color string
}

func hBars(label string, items []barItem) string {
	const w = 720.0
	const left, right, barH, gap = 170.0, 150.0, 14.0, 6.0
	h := 8 + float64(len(items))*(barH+gap)
	d := newSVG(w, h, label)
	top := 0.0
	for _, it := range items {
		top = math.Max(top, it.Value)
	}
	bw := w - left - right
	for i, it := range items {
		y := 6 + float64(i)*(barH+gap)
		d.text(left-6, y+barH-3, "end", "label", it.Label)
		l := 0.0
		if top > 0 {
			l = it.Value / top * bw
		}
		c := it.Color
		if c == "" {
			c = palette[0]
		}
		d.rect(left, y, math.Max(l, 0.5), barH, c, it.Label+": "+it.Text)
		d.text(left+l+6, y+barH-3, "start", "tick", it.Text)
	}
	return d.String()
}

// heatCell is one cell of a heat map.
type heatCell struct {
	Fill string
	// Mark outlines the cell (a significant finding).
	Mark bool
	Tip  string
	Text string
}

// heatMap draws a grid of cells with row labels on the left and optional
// column labels above.
//
// Column labels wider than a cell are drawn slanted, so that neighbours never
// overlap; the row labels' column is as wide as the longest of them.
func svgHeatMap(label string, rowLabels, colLabels []string, cells [][]heatCell, cellW, cellH float64, xLabel string) string {
	left := 150.0
	for _, l := range rowLabels {
		left = math.Max(left, labelWidth(l)+12)
	}
	top := 8.0
	widest := 0.0
	for _, c := range colLabels {
		widest = math.Max(widest, labelWidth(c))
	}
	slant := widest > cellW-6
	const sin, cos = 0.6428, 0.7660 // a 40° slant
	switch {
	case slant:
		top = 14 + widest*sin
	case len(colLabels) > 0:
		top = 28
	}
	cols := 0
	for _, r := range cells {
		cols = max(cols, len(r))
	}
	w := left + float64(cols)*cellW + 10
	if slant {
		w += widest * cos
	}
	h := top + float64(len(rowLabels))*cellH + 24
	d := newSVG(math.Max(w, 300), h, label)
	for j, c := range colLabels {
		x := left + float64(j)*cellW + cellW/2
		if slant {
			fmt.Fprintf(&d.b, `<text class="label col" text-anchor="start" transform="translate(%.1f %.1f) rotate(-40)">%s</text>`, x-3, top-6, esc(c))
			continue
		}
		d.text(x, top-8, "middle", "label col", c)
	}
	for i, r := range cells {
		y := top + float64(i)*cellH
		d.text(left-6, y+cellH/2+4, "end", "label", rowLabels[i])
		for j, c := range r {
			x := left + float64(j)*cellW
			d.rect(x, y, cellW, cellH, c.Fill, c.Tip)
			if c.Mark {
				fmt.Fprintf(&d.b, `<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="none" class="mark"/>`, x+1, y+1, cellW-2, cellH-2)
			}
			if c.Text != "" {
				d.text(x+cellW/2, y+cellH/2+4, "middle", textClass(c.Fill), c.Text)
			}
		}
	}
	if xLabel != "" {
		d.text(left+float64(cols)*cellW/2, h-6, "middle", "label", xLabel)
	}
	return d.String()
}

// labelWidth estimates the width of a label in px at the charts' 11 px
// font (a generous 6.5 px a character, so that estimates err wide).
func labelWidth(s string) float64 { return 6.5 * float64(utf8.RuneCountInString(cutLongNames(s, nil))) }

// sequential maps a share in [0, 1] to a colour from white to dark blue
// (lightness carries the value, so it reads in greyscale and for every kind
// of colour vision).
func sequential(v float64) string {
	v = math.Max(0, math.Min(1, v))
	// white (247,251,255) → #08306b (8,48,107), the ColorBrewer Blues ends.
	r := 247 + (8-247)*v
	g := 251 + (48-251)*v
	b := 255 + (107-255)*v
	return fmt.Sprintf("#%02x%02x%02x", int(r), int(g), int(b))
}

// diverging maps v in [−1, 1] to blue (negative) · white · orange-brown
// (positive), the ColorBrewer PuOr ends, safe for colour-blind readers.
func diverging(v float64) string {
	v = math.Max(-1, math.Min(1, v))
	from := [3]float64{247, 247, 247}
	to := [3]float64{179, 88, 6} // #b35806
	if v < 0 {
		to = [3]float64{84, 39, 136} // #542788
		v = -v
	}
	var c [3]int
	for i := range c {
		c[i] = int(from[i] + (to[i]-from[i])*v)
	}
	return fmt.Sprintf("#%02x%02x%02x", c[0], c[1], c[2])
}

// textClass picks dark or light text for a label drawn on fill ("#rrggbb"),
// by the fill's relative luminance (WCAG), so that labels keep their
// contrast on every colour of the palette.
func textClass(fill string) string {
	var r, g, b int
	if _, err := fmt.Sscanf(fill, "#%02x%02x%02x", &r, &g, &b); err != nil {
		return "ontext-dark"
	}
	lin := func(c int) float64 {
		v := float64(c) / 255
		if v <= 0.04045 {
			return v / 12.92
		}
		return math.Pow((v+0.055)/1.055, 2.4)
	}
	if 0.2126*lin(r)+0.7152*lin(g)+0.0722*lin(b) > 0.22 {
		return "ontext-dark"
	}
	return "ontext-light"
}

// esc escapes s for HTML, with its long names shortened (cutLongNames).
func esc(s string) string { return html.EscapeString(cutLongNames(s, nil)) }

// escWhole escapes s whole: only for the page's list of full names.
func escWhole(s string) string { return html.EscapeString(s) }
