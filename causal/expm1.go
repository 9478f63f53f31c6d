//go:build amd64 && !amd64.v3

package causal

import "math"

// The constants of math/expm1.go's primary range, which expm1x3 and
// expm1x6 use as it does.
const (
	expm1Ln2Half = 3.46573590279972654709e-01  // 0x3fd62e42fefa39ef
	expm1Tiny    = 1.0 / (1 << 54)             // 2**-54
	expm1Q1      = -3.33333333333331316428e-02 // 0xBFA11111111110F4
	expm1Q2      = 1.58730158725481460165e-03  // 0x3F5A01A019FE5585
	expm1Q3      = -7.93650757867487942473e-05 // 0xBF14CE199EAADBB7
	expm1Q4      = 4.00821782732936239552e-06  // 0x3ED0CFCA86E65239
	expm1Q5      = -2.01099218183624371326e-07 // 0xBE8AFDB76E09C32D
)

// expm1x3 is math.Expm1 of each of its three arguments, to the bit, for
// shares3, which takes three a row of every pair. When all three are in
// Expm1's primary range, |x| in [2⁻⁵⁴, ln 2 / 2] (β × load differences
// of a few tenths at most: all of them on the 100 MiB OTLP dump of
// docs/otlp.md), Expm1 reduces nothing (k = 0) and evaluates its rational
// approximation directly; here the three run side by side in one call,
// where three calls of math.Expm1, each through its special cases and
// reductions, ran one after the other (a third less time for shares3 in a
// benchmark of 74,000 rows). The steps are Go's own (math/expm1.go: the
// constants and the order of every operation), so the values are the
// same; any other argument sends all three to math.Expm1. The same
// digits need the same roundings: neither this copy nor math/expm1.go may
// be compiled with fused multiply-adds, which amd64 below GOAMD64=v3 never
// forms; elsewhere (s390x's math.Expm1 is assembly besides)
// expm1_fused.go calls math.Expm1 always.
func expm1x3(x1, x2, x3 float64) (float64, float64, float64) {
	a1, a2, a3 := math.Abs(x1), math.Abs(x2), math.Abs(x3)
	if !(a1 >= expm1Tiny && a1 <= expm1Ln2Half && a2 >= expm1Tiny && a2 <= expm1Ln2Half && a3 >= expm1Tiny && a3 <= expm1Ln2Half) { // NaN too
		return math.Expm1(x1), math.Expm1(x2), math.Expm1(x3)
	}
	hfx1, hfx2, hfx3 := 0.5*x1, 0.5*x2, 0.5*x3
	hxs1, hxs2, hxs3 := x1*hfx1, x2*hfx2, x3*hfx3
	r1 := 1 + hxs1*(expm1Q1+hxs1*(expm1Q2+hxs1*(expm1Q3+hxs1*(expm1Q4+hxs1*expm1Q5))))
	r2 := 1 + hxs2*(expm1Q1+hxs2*(expm1Q2+hxs2*(expm1Q3+hxs2*(expm1Q4+hxs2*expm1Q5))))
	r3 := 1 + hxs3*(expm1Q1+hxs3*(expm1Q2+hxs3*(expm1Q3+hxs3*(expm1Q4+hxs3*expm1Q5))))
	t1, t2, t3 := 3-r1*hfx1, 3-r2*hfx2, 3-r3*hfx3
	e1 := hxs1 * ((r1 - t1) / (6.0 - x1*t1))
	e2 := hxs2 * ((r2 - t2) / (6.0 - x2*t2))
	e3 := hxs3 * ((r3 - t3) / (6.0 - x3*t3))
	return x1 - (x1*e1 - hxs1), x2 - (x2*e2 - hxs2), x3 - (x3*e3 - hxs3)
}

// expm1x6 is expm1x3 of two rows' three arguments at once: six
// independent evaluations written side by side, which the processor
// overlaps where three a call left it waiting on each one's chain of
// dependent operations. The same steps as expm1x3, so math.Expm1's
// values; any argument outside the primary range sends all six to
// math.Expm1.
func expm1x6(x1, x2, x3, x4, x5, x6 float64) (float64, float64, float64, float64, float64, float64) {
	a1, a2, a3, a4, a5, a6 := math.Abs(x1), math.Abs(x2), math.Abs(x3), math.Abs(x4), math.Abs(x5), math.Abs(x6)
	if !(a1 >= expm1Tiny && a1 <= expm1Ln2Half && a2 >= expm1Tiny && a2 <= expm1Ln2Half && a3 >= expm1Tiny && a3 <= expm1Ln2Half && a4 >= expm1Tiny && a4 <= expm1Ln2Half && a5 >= expm1Tiny && a5 <= expm1Ln2Half && a6 >= expm1Tiny && a6 <= expm1Ln2Half) { // NaN too
		return math.Expm1(x1), math.Expm1(x2), math.Expm1(x3), math.Expm1(x4), math.Expm1(x5), math.Expm1(x6)
	}
	hfx1, hfx2, hfx3, hfx4, hfx5, hfx6 := 0.5*x1, 0.5*x2, 0.5*x3, 0.5*x4, 0.5*x5, 0.5*x6
	hxs1, hxs2, hxs3, hxs4, hxs5, hxs6 := x1*hfx1, x2*hfx2, x3*hfx3, x4*hfx4, x5*hfx5, x6*hfx6
	r1 := 1 + hxs1*(expm1Q1+hxs1*(expm1Q2+hxs1*(expm1Q3+hxs1*(expm1Q4+hxs1*expm1Q5))))
	r2 := 1 + hxs2*(expm1Q1+hxs2*(expm1Q2+hxs2*(expm1Q3+hxs2*(expm1Q4+hxs2*expm1Q5))))
	r3 := 1 + hxs3*(expm1Q1+hxs3*(expm1Q2+hxs3*(expm1Q3+hxs3*(expm1Q4+hxs3*expm1Q5))))
	r4 := 1 + hxs4*(expm1Q1+hxs4*(expm1Q2+hxs4*(expm1Q3+hxs4*(expm1Q4+hxs4*expm1Q5))))
	r5 := 1 + hxs5*(expm1Q1+hxs5*(expm1Q2+hxs5*(expm1Q3+hxs5*(expm1Q4+hxs5*expm1Q5))))
	r6 := 1 + hxs6*(expm1Q1+hxs6*(expm1Q2+hxs6*(expm1Q3+hxs6*(expm1Q4+hxs6*expm1Q5))))
	t1, t2, t3, t4, t5, t6 := 3-r1*hfx1, 3-r2*hfx2, 3-r3*hfx3, 3-r4*hfx4, 3-r5*hfx5, 3-r6*hfx6
	e1 := hxs1 * ((r1 - t1) / (6.0 - x1*t1))
	e2 := hxs2 * ((r2 - t2) / (6.0 - x2*t2))
	e3 := hxs3 * ((r3 - t3) / (6.0 - x3*t3))
	e4 := hxs4 * ((r4 - t4) / (6.0 - x4*t4))
	e5 := hxs5 * ((r5 - t5) / (6.0 - x5*t5))
	e6 := hxs6 * ((r6 - t6) / (6.0 - x6*t6))
	return x1 - (x1*e1 - hxs1), x2 - (x2*e2 - hxs2), x3 - (x3*e3 - hxs3), x4 - (x4*e4 - hxs4), x5 - (x5*e5 - hxs5), x6 - (x6*e6 - hxs6)
}
