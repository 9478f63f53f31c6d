package align

import "math"

// The hard anchors of a segment confine the unknown line r(u) = a + d·u to a
// convex polygon in the (a, d) plane: every one-sided bound "r(u_i) ≥ c_i" or
// "r(u_i) ≤ c_i" is a half-plane (Duda et al., ICDCS 1987; docs/statistics.md
// A.4 step 1). Here r is the reference time minus the local time minus a
// segment constant a0, in ns; u is local time minus the segment centre, in
// seconds; so a is an offset in ns and d a drift in ns per second (1 ppm =
// 1000 ns/s). The polygon starts as the box |d| ≤ Dmax, |a| ≤ polyReach and is
// clipped by each half-plane in turn (Sutherland–Hodgman against one edge),
// which costs O(vertices) per constraint: the vertex count stays small
// because only the constraints near the envelope survive.

// polyReach is the half-width of the initial offset range, in ns, around a0.
// A vertex still that far out means the anchors bound the offset on one side
// only: the polygon is open and promises nothing on that side.
const polyReach = 1e13

// clipSlack loosens every constraint by one ns: timestamps are integers, so
// a true mapping rounded onto them can miss a bound by up to a ns, and exact
// data (no jitter at all) must not look contradictory. Guaranteed bounds are
// therefore guaranteed up to the clock resolution of 1 ns.
const clipSlack = 1.0

// vertexEps is how close two vertices (ns, ns/s) must be to count as one.
const vertexEps = 1e-6

type vertex struct{ a, d float64 }

// halfPlane is a + d·u ≥ c (lower) or a + d·u ≤ c (upper).
type halfPlane struct {
	u, c  float64
	lower bool
}

// signedSlack is how far inside the half-plane the point is (negative:
// outside), in ns.
func (h halfPlane) signedSlack(v vertex) float64 {
	s := v.a + v.d*h.u - h.c
	if h.lower {
		return s
	}
	return -s
}

// polygon is a convex polygon given by its vertices in order; empty means
// infeasible.
type polygon []vertex

func newBox(dmax float64) polygon {
	return polygon{{-polyReach, -dmax}, {polyReach, -dmax}, {polyReach, dmax}, {-polyReach, dmax}}
}

// clip returns p ∩ h, with h loosened by clipSlack, reusing buf for the
// result. The same loosened plane decides inside and places the crossing, so
// the result stays convex.
func (p polygon) clip(h halfPlane, buf polygon) polygon {
	out := buf[:0]
	n := len(p)
	if n == 0 {
		return out
	}
	allIn := true
	for _, v := range p {
		if h.signedSlack(v)+clipSlack < 0 {
			allIn = false
			break
		}
	}
	if allIn {
		return append(out, p...)
	}
	for i := range n {
		cur, next := p[i], p[(i+1)%n]
		sc, sn := h.signedSlack(cur)+clipSlack, h.signedSlack(next)+clipSlack
		inC, inN := sc >= 0, sn >= 0
		if inC {
			out = append(out, cur)
		}
		if inC != inN {
			t := sc / (sc - sn)
			out = append(out, vertex{cur.a + t*(next.a-cur.a), cur.d + t*(next.d-cur.d)})
		}
	}
	return dedupe(out)
}

// dedupe removes consecutive vertices closer than a fraction of a ns, which
// clipping creates when a constraint passes through a vertex.
func dedupe(p polygon) polygon {
	if len(p) < 2 {
		return p
	}
	out := p[:1]
	for _, v := range p[1:] {
		last := out[len(out)-1]
		if math.Abs(v.a-last.a) > vertexEps || math.Abs(v.d-last.d) > vertexEps {
			out = append(out, v)
		}
	}
	if len(out) > 1 {
		f, l := out[0], out[len(out)-1]
		if math.Abs(f.a-l.a) <= vertexEps && math.Abs(f.d-l.d) <= vertexEps {
			out = out[:len(out)-1]
		}
	}
	return out
}

// intersect clips the polygon by every half-plane; it returns nil when the
// constraints contradict each other.
func intersect(dmax float64, hs []halfPlane) polygon {
	p := newBox(dmax)
	buf := make(polygon, 0, 16)
	for _, h := range hs {
		buf = p.clip(h, buf)
		p, buf = buf, p
		if len(p) == 0 {
			return nil
		}
	}
	return p
}

// rangeAt returns the smallest and largest r(u) over the polygon; open is true
// when the polygon is unbounded in the offset direction (a bound that is
// really the initial box).
func (p polygon) rangeAt(u float64) (lo, hi float64, openLo, openHi bool) {
	lo, hi = math.Inf(1), math.Inf(-1)
	for _, v := range p {
		r := v.a + v.d*u
		if r < lo {
			lo = r
			openLo = v.a <= -polyReach/2
		}
		if r > hi {
			hi = r
			openHi = v.a >= polyReach/2
		}
	}
	return lo, hi, openLo, openHi
}

// bounded reports whether every vertex is a real constraint corner, not a
// corner of the initial offset range.
func (p polygon) bounded() bool {
	for _, v := range p {
		if math.Abs(v.a) >= polyReach/2 {
			return false
		}
	}
	return len(p) > 0
}

// contains reports whether v satisfies every edge of the (convex) polygon,
// with the clipping slack.
func (p polygon) contains(v vertex, scale float64) bool {
	n := len(p)
	if n < 3 {
		return false
	}
	sign := 0.0
	for i := range n {
		a, b := p[i], p[(i+1)%n]
		cross := (b.a-a.a)*(v.d-a.d)*scale - (b.d-a.d)*scale*(v.a-a.a)
		if math.Abs(cross) < vertexEps {
			continue
		}
		if sign == 0 {
			sign = math.Copysign(1, cross)
		} else if math.Copysign(1, cross) != sign {
			return false
		}
	}
	return true
}

// project returns the point of the polygon nearest to v, measuring a drift
// difference by the offset error it causes at |u| = scale seconds, so that
// offset and drift are traded in the units that matter: ns at the edge of the
// data.
func (p polygon) project(v vertex, scale float64) vertex {
	if len(p) == 0 || p.contains(v, scale) {
		return v
	}
	best, bestDist := p[0], math.Inf(1)
	for i := range p {
		a, b := p[i], p[(i+1)%len(p)]
		// Work in scaled coordinates (a, d·scale), where distance is
		// Euclidean.
		ax, ay := a.a, a.d*scale
		bx, by := b.a, b.d*scale
		px, py := v.a, v.d*scale
		dx, dy := bx-ax, by-ay
		t := 0.0
		if l2 := dx*dx + dy*dy; l2 > 0 {
			t = ((px-ax)*dx + (py-ay)*dy) / l2
			t = math.Max(0, math.Min(1, t))
		}
		qx, qy := ax+t*dx, ay+t*dy
		if dist := (qx-px)*(qx-px) + (qy-py)*(qy-py); dist < bestDist {
			bestDist = dist
			best = vertex{qx, qy / scale}
		}
	}
	return best
}

// centroid is the area centroid of the polygon (the vertex mean for a
// degenerate one): the point estimate when hard bounds on both sides are all
// there is (docs/statistics.md A.4 step 2b, "or (simpler)" the centre of P).
func (p polygon) centroid() vertex {
	var area, ca, cd float64
	n := len(p)
	for i := range n {
		a, b := p[i], p[(i+1)%n]
		cross := a.a*b.d - b.a*a.d
		area += cross
		ca += (a.a + b.a) * cross
		cd += (a.d + b.d) * cross
	}
	if math.Abs(area) < 1e-9 {
		var m vertex
		for _, v := range p {
			m.a += v.a
			m.d += v.d
		}
		m.a /= float64(n)
		m.d /= float64(n)
		return m
	}
	return vertex{ca / (3 * area), cd / (3 * area)}
}
