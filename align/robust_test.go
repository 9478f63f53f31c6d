package align

import (
	"math"
	"slices"
	"testing"
)

func TestWeightedLine(t *testing.T) {
	u := []float64{-10, 0, 10, 20}
	r := []float64{-10*3 + 7, 7, 10*3 + 7, 1e6}
	w := []float64{1, 1, 1, 0} // the last point carries no weight
	a, d := weightedLine(u, r, w, false)
	if math.Abs(a-7) > 1e-9 || math.Abs(d-3) > 1e-9 {
		t.Errorf("weightedLine = %g, %g; want 7, 3", a, d)
	}
	a, d = weightedLine(u, r, w, true)
	if math.Abs(a-7) > 1e-9 || d != 0 {
		t.Errorf("weightedLine fixed drift = %g, %g; want 7, 0", a, d)
	}
}

func TestPolygon(t *testing.T) {
	const dmax = 1e6
	// 0 ≤ r(0) ≤ 1000 and 0 ≤ r(1) ≤ 1000: a square in (r(0), r(1)) space,
	// every side loosened by the 1 ns resolution.
	const s = clipSlack
	hs := []halfPlane{{u: 0, c: 0, lower: true}, {u: 0, c: 1000}, {u: 1, c: 0, lower: true}, {u: 1, c: 1000}}
	p := intersect(dmax, hs)
	if !p.bounded() || len(p) != 4 {
		t.Fatalf("polygon %v, want a bounded quadrilateral", p)
	}
	for _, tc := range []struct{ u, lo, hi float64 }{
		{0, -s, 1000 + s}, {1, -s, 1000 + s}, {0.5, -s, 1000 + s}, {2, -1000 - 3*s, 2000 + 3*s}, {-1, -1000 - 3*s, 2000 + 3*s},
	} {
		lo, hi, openLo, openHi := p.rangeAt(tc.u)
		if math.Abs(lo-tc.lo) > 1e-6 || math.Abs(hi-tc.hi) > 1e-6 || openLo || openHi {
			t.Errorf("rangeAt(%g) = [%g, %g] open %v %v, want [%g, %g]", tc.u, lo, hi, openLo, openHi, tc.lo, tc.hi)
		}
	}
	c := p.centroid()
	if math.Abs(c.a-500) > 1e-6 || math.Abs(c.d) > 1e-6 {
		t.Errorf("centroid %v, want (500, 0)", c)
	}
	if got := p.project(vertex{500, 0}, 1); got != (vertex{500, 0}) {
		t.Errorf("a point inside moved to %v", got)
	}
	if got := p.project(vertex{2000, 0}, 1); math.Abs(got.a-1000-s) > 1e-6 || math.Abs(got.d) > 1e-6 {
		t.Errorf("project (2000, 0) = %v, want (%g, 0)", got, 1000+s)
	}
	// A bound 1 ns past the region is within the resolution; 3 ns is not.
	if q := intersect(dmax, append(slices.Clone(hs), halfPlane{u: 0.5, c: 1001, lower: true})); q == nil {
		t.Error("a bound within the 1 ns resolution emptied the region")
	}
	if q := intersect(dmax, append(slices.Clone(hs), halfPlane{u: 0.5, c: 1003, lower: true})); q != nil {
		t.Errorf("infeasible constraints gave %v", q)
	}
	// One-sided bounds leave it open above.
	q := intersect(dmax, hs[:1])
	if q.bounded() {
		t.Error("a lower bound alone closed the polygon")
	}
	if _, _, openLo, openHi := q.rangeAt(0); openLo || !openHi {
		t.Errorf("a lower bound alone: open below %v above %v, want only above", openLo, openHi)
	}
	// Drift is capped: a single two-sided bracket widens with distance by at
	// most dmax per second.
	b := intersect(dmax, hs[:2])
	lo, hi, _, _ := b.rangeAt(3)
	if math.Abs(lo-(-s-3*dmax)) > 1e-3 || math.Abs(hi-(1000+s+3*dmax)) > 1e-3 {
		t.Errorf("one bracket at u=0, range at u=3: [%g, %g], want [%g, %g]", lo, hi, -s-3*dmax, 1000+s+3*dmax)
	}
}
