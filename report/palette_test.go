package report

import (
	"fmt"
	"math"
	"regexp"
	"strings"
	"testing"

	"github.com/llmprof/llmprof/attribution"
)

// lab converts "#rrggbb" (sRGB, D65) to CIELAB.
func lab(t *testing.T, hex string) [3]float64 {
	t.Helper()
	var r, g, b int
	if _, err := fmt.Sscanf(hex, "#%02x%02x%02x", &r, &g, &b); err != nil {
		t.Fatalf("colour %q: %v", hex, err)
	}
	lin := func(c int) float64 {
		v := float64(c) / 255
		if v <= 0.04045 {
			return v / 12.92
		}
		return math.Pow((v+0.055)/1.055, 2.4)
	}
	R, G, B := lin(r), lin(g), lin(b)
	x := (0.4124564*R + 0.3575761*G + 0.1804375*B) / 0.95047
	y := 0.2126729*R + 0.7151522*G + 0.0721750*B
	z := (0.0193339*R + 0.1191920*G + 0.9503041*B) / 1.08883
	f := func(v float64) float64 {
		if v > 216.0/24389 {
			return math.Cbrt(v)
		}
		return v/(3*(6.0/29)*(6.0/29)) + 4.0/29
	}
	return [3]float64{116*f(y) - 16, 500 * (f(x) - f(y)), 200 * (f(y) - f(z))}
}

// deltaE2000 is the CIEDE2000 colour difference (Sharma, Wu and Dalal,
// "The CIEDE2000 color-difference formula", Color Res. Appl. 30(1), 2005).
func deltaE2000(a, b [3]float64) float64 {
	rad := math.Pi / 180
	c1, c2 := math.Hypot(a[1], a[2]), math.Hypot(b[1], b[2])
	cb := (c1 + c2) / 2
	g := 0.5 * (1 - math.Sqrt(math.Pow(cb, 7)/(math.Pow(cb, 7)+math.Pow(25, 7))))
	a1, a2 := (1+g)*a[1], (1+g)*b[1]
	c1p, c2p := math.Hypot(a1, a[2]), math.Hypot(a2, b[2])
	hue := func(y, x float64) float64 {
		if x == 0 && y == 0 {
			return 0
		}
		return math.Mod(math.Atan2(y, x)/rad+360, 360)
	}
	h1, h2 := hue(a[2], a1), hue(b[2], a2)
	dL, dC := b[0]-a[0], c2p-c1p
	dh := h2 - h1
	switch {
	case c1p*c2p == 0:
		dh = 0
	case dh > 180:
		dh -= 360
	case dh < -180:
		dh += 360
	}
	dH := 2 * math.Sqrt(c1p*c2p) * math.Sin(dh/2*rad)
	lbp, cbp := (a[0]+b[0])/2, (c1p+c2p)/2
	hbp := h1 + h2
	if c1p*c2p != 0 {
		switch {
		case math.Abs(h1-h2) <= 180:
			hbp = (h1 + h2) / 2
		case h1+h2 < 360:
			hbp = (h1 + h2 + 360) / 2
		default:
			hbp = (h1 + h2 - 360) / 2
		}
	}
	tt := 1 - 0.17*math.Cos((hbp-30)*rad) + 0.24*math.Cos(2*hbp*rad) + 0.32*math.Cos((3*hbp+6)*rad) - 0.20*math.Cos((4*hbp-63)*rad)
	dth := 30 * math.Exp(-math.Pow((hbp-275)/25, 2))
	rc := 2 * math.Sqrt(math.Pow(cbp, 7)/(math.Pow(cbp, 7)+math.Pow(25, 7)))
	sl := 1 + 0.015*math.Pow(lbp-50, 2)/math.Sqrt(20+math.Pow(lbp-50, 2))
	sc, sh := 1+0.045*cbp, 1+0.015*cbp*tt
	rt := -math.Sin(2*dth*rad) * rc
	return math.Sqrt(math.Pow(dL/sl, 2) + math.Pow(dC/sc, 2) + math.Pow(dH/sh, 2) + rt*(dC/sc)*(dH/sh))
}

// TestDeltaE2000 checks the formula on pairs of Sharma et al.'s test data.
func TestDeltaE2000(t *testing.T) {
	for _, c := range []struct {
		a, b [3]float64
		want float64
	}{
		{[3]float64{50, 2.6772, -79.7751}, [3]float64{50, 0, -82.7485}, 2.0425},
		{[3]float64{50, -1.3802, -84.2814}, [3]float64{50, 0, -82.7485}, 1.0},
		{[3]float64{50, 2.5, 0}, [3]float64{73, 25, -18}, 27.1492},
		{[3]float64{60.2574, -34.0099, 36.2677}, [3]float64{60.4626, -34.1751, 39.4387}, 1.2644},
	} {
		if got := deltaE2000(c.a, c.b); math.Abs(got-c.want) > 1e-3 {
			t.Errorf("ΔE00(%v, %v) = %.4f, want %.4f", c.a, c.b, got, c.want)
		}
	}
}

// TestAreaPaletteDistinct: every per-token bucket gets its own colour, and
// any two of them (the no-GPU-data grey included) differ by at least
// ΔE00 15, well above the ~2–5 at which neighbouring colours confuse.
func TestAreaPaletteDistinct(t *testing.T) {
	colors := map[string]string{}
	for _, b := range attribution.Buckets() {
		colors[b.String()] = bucketColor(b.String())
	}
	if len(areaPalette)+1 < int(attribution.NumBuckets) {
		t.Errorf("%d area colours and a grey for %d buckets", len(areaPalette), attribution.NumBuckets)
	}
	names := attribution.BucketNames()
	worst, wa, wb := math.Inf(1), "", ""
	for i, a := range names {
		for _, b := range names[i+1:] {
			if d := deltaE2000(lab(t, colors[a]), lab(t, colors[b])); d < worst {
				worst, wa, wb = d, a, b
			}
		}
	}
	if worst < 15 {
		t.Errorf("buckets %s (%s) and %s (%s) are only ΔE00 %.1f apart", wa, colors[wa], wb, colors[wb], worst)
	}
	t.Logf("closest bucket colours: %s and %s, ΔE00 %.1f", wa, wb, worst)
}

var slantRE = regexp.MustCompile(`translate\(([\d.]+) ([\d.]+)\) rotate\(-40\)">([^<]*)<`)

// TestHeatMapColumnLabelsDoNotOverlap: column labels wider than a cell are
// slanted, and the slanted labels' boxes, at the estimated text width, do
// not cross (the browser test measures the real ones).
func TestHeatMapColumnLabelsDoNotOverlap(t *testing.T) {
	labels := []string{"batch-eval", "chat", "chat+search (shared)", "embed", "search"}
	cells := make([][]heatCell, len(labels))
	for i := range cells {
		cells[i] = make([]heatCell, len(labels))
		for j := range cells[i] {
			cells[i][j] = heatCell{Fill: "#e0e0e0", Text: "n/e"}
		}
	}
	svg := svgHeatMap("m", labels, labels, cells, 72, 24, "")
	m := slantRE.FindAllStringSubmatch(svg, -1)
	if len(m) != len(labels) {
		t.Fatalf("%d slanted column labels, want %d:\n%s", len(m), len(labels), svg)
	}
	// Two labels slanted by the same angle from points 72 px apart are
	// parallel strips; they overlap when the horizontal gap is less than
	// the text height over sin 40°.
	for i := 1; i < len(m); i++ {
		var x0, x1 float64
		fmt.Sscan(m[i-1][1], &x0)
		fmt.Sscan(m[i][1], &x1)
		if gap := (x1 - x0) * math.Sin(40*math.Pi/180); gap < 13 {
			t.Errorf("labels %q and %q are %.1f px apart across the slant, less than an 11 px text's height", m[i-1][3], m[i][3], gap)
		}
	}
	if strings.Contains(svg, `text-anchor="middle" class="label col"`) {
		t.Error("some column labels are still centred over their cells")
	}
	// Short labels over wide cells stay horizontal.
	if s := svgHeatMap("m", []string{"a", "b"}, []string{"a", "b"}, cells[:2], 72, 24, ""); slantRE.MatchString(s) {
		t.Error("short column labels were slanted")
	}
}
