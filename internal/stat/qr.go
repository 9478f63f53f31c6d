package stat

import "math"

// maxFusedQR is the widest design householderQR factors: up to it gonum's
// Dgeqrf runs its unblocked Dgeqr2 (its block size, Ilaenv's 32, must be
// below the width for the blocked code) and Dormqr its unblocked Dorm2r
// (the same bound), the two routines householderQR repeats.
const maxFusedQR = 32

// Dlarfg's safe minimum, dlamchS/dlamchE in gonum's lapack/gonum/lapack.go.
const qrSafmin = 0x1p-1022 / 0x1p-53

// householderQR is gonum's lapack64.Geqrf of a (m×k, k ≤ maxFusedQR <
// m) into its Householder reflectors and R, with tau their scalars,
// followed, where y is not nil, by lapack64.Ormqr(Left, Trans) of those
// reflectors on the column y (m long), which then holds Qᵀ of what it
// held: the same operations in the same order on every element, so the
// same bits. a is column-major here (column j is a[j·m:(j+1)·m]), where
// gonum's is row-major: the factor is the same matrix, each element
// computed alike.
//
// Reflector i is Dlarfg's of column i (the 2-norm of the column below the
// diagonal by Dnrm2's scaled sums, β, τ and the column scaled by 1/(α−β):
// v, with v_i = 1) and Dlarf's application to the columns right of it
// (w = Cᵀv by Dgemv, then C −= τ v wᵀ by Dger, over the rows up to v's
// last nonzero element and the columns up to C's last nonzero one);
// Dorm2r applies reflector i to y the same way once a is factored, and
// since nothing after step i changes v_i, τ_i or the rows of y it reads,
// it is applied at step i here, y one more column beside C's. Each of w's
// sums runs over the rows in order from 0, as gonum's GemvT
// (internal/asm/f64, and its Go version) adds them, each of Dger's
// products is the one it forms, and each element is updated once a
// reflector. What differs is the order among independent elements: gonum
// sweeps the row-major matrix a row at a time, where Dnrm2, Dscal and
// Ormqr's products walk down its columns (a cache line for each element);
// here each of those walks is down a contiguous column, and w's sums run
// up to four columns side by side (y's among them, where Ormqr's pass for
// y alone waited on each addition before the next).
//
// Every product added to a sum is rounded before the addition
// (float64(x*y), which the Go spec says the compiler may not fuse into
// one FMA): gonum's amd64 assembly multiplies and adds apart, and a
// compiler that fuses (GOAMD64=v3, arm64, ppc64le, s390x) would round
// once where it rounds twice. So the bits are gonum's amd64 ones on every
// platform; gonum's own Go kernels, which it builds elsewhere
// (internal/asm/f64's noasm files), may fuse and then differ in the last
// digits (TestHouseholderQRMatchesGonum says which it compares with).
//
// w is scratch of k floats at least.
//
// Passes over the columns are shared where the values and the order of
// every operation stay the same (docs/tenants.md, "What the kernel view
// costs"): reflector i's scaling of its column is done in the pass that
// forms w from it, each v_r scaled, stored and multiplied in turn; and the
// 2-norm reflector i+1 takes of column i+1 below its diagonal is summed in
// reflector i's pass that writes that column (the rows it leaves alone
// after), in the rows' order as l2normOf sums it. Where scaling turns the
// column's last nonzero element into zero (an underflow: Dlarf's rows end
// earlier then), w is formed again over the rows it should be.
func householderQR(a []float64, m, k int, tau, y, w []float64) {
	householderQRFrom(a, m, k, tau, y, w, l2norm{}, false, true)
}

// householderQRFrom is householderQR given, where have0, the 2-norm of
// column 0 below its diagonal (l2normOf of a[1:m], as unitColumnsT sums it
// while it writes the column). Where lastV is false the last reflector's
// vector is not stored: its column below the diagonal keeps what it held
// (the reflector is applied to y all the same, each v_r formed as it is
// read, the same product), for a caller that reads R and Qᵀy alone
// (FitOLS), so that the column is read twice and not written.
func householderQRFrom(a []float64, m, k int, tau, y, w []float64, norm0 l2norm, have0, lastV bool) {
	a = a[:m*k]
	w = w[:k]
	if y != nil {
		y = y[:m]
	}
	col := func(j int) []float64 { return a[j*m : (j+1)*m : (j+1)*m] }
	var colsBuf [maxFusedQR][]float64
	// next is column i's norm below its diagonal, where the pass before
	// summed it (haveNext).
	next, haveNext := norm0, have0
	for i := 0; i < k; i++ {
		ci := col(i)
		alpha := ci[i]
		beta, t := alpha, 0.0
		// pending is the factor column i below its diagonal is yet to be
		// scaled by (Dlarfg's Dscal), in the pass that projects on it.
		pending, scaleLater := 0.0, false
		have := haveNext
		haveNext = false
		if m-i > 1 {
			// Dlarfg(m−i, α, a[i+1:, i]).
			x := ci[i+1:]
			var xnorm float64
			if have {
				xnorm = next.norm()
			} else {
				xnorm = l2normOf(x)
			}
			if xnorm != 0 {
				beta = -math.Copysign(math.Hypot(alpha, xnorm), alpha)
				knt := 0
				if math.Abs(beta) < qrSafmin {
					const rsafmn = 1 / qrSafmin
					for {
						knt++
						scale(x, rsafmn)
						beta *= rsafmn
						alpha *= rsafmn
						if math.Abs(beta) >= qrSafmin {
							break
						}
					}
					xnorm = l2normOf(x)
					beta = -math.Copysign(math.Hypot(alpha, xnorm), alpha)
				}
				t = (beta - alpha) / beta
				if f := 1 / (alpha - beta); knt == 0 && f != 0 {
					pending, scaleLater = f, true
				} else {
					scale(x, f)
				}
				for range knt {
					beta *= qrSafmin
				}
			}
		}
		ci[i] = beta
		tau[i] = t
		if t == 0 {
			if scaleLater {
				scale(ci[i+1:], pending)
			}
			continue // H_i is the identity: Dlarf does nothing
		}
		// Dlarf's rows: i to v's last nonzero element (of the column as it
		// is before its scaling where that is pending: the same but for an
		// underflow, which the projection below looks for).
		last := m - 1
		for last > i && ci[last] == 0 {
			last--
		}
		cs, lastCol := reflected(a, m, k, i, last, y, colsBuf[:0])
		if scaleLater && !lastV && i == k-1 && len(cs) == 1 {
			// y alone, and v not kept: each v_r formed where it is read.
			x := ci[i+1 : last+1]
			w[0] = projectScaledKeep(cs[0], x, pending)
			if last > i && float64(x[len(x)-1]*pending) == 0 {
				// The underflow below: scale and take the general way.
				scale(ci[i+1:], pending)
				for last > i && ci[last] == 0 {
					last--
				}
				cs, _ = reflected(a, m, k, i, last, y, colsBuf[:0])
				projectAll(cs, ci[i+1:last+1], w[:len(cs)])
				v := ci[i+1 : last+1]
				for j := range cs {
					reflect(cs[j], v, -t, w[j])
				}
				continue
			}
			reflectScaled(cs[0], x, pending, -t, w[0])
			continue
		}
		if scaleLater {
			// The rows past the last nonzero one are zeros: their scaling
			// (to zeros of either sign) reads nothing else.
			scale(ci[last+1:], pending)
		}
		ws := w[:len(cs)]
		if scaleLater {
			projectScaling(cs, ci[i+1:last+1], pending, ws)
			if last > i && ci[last] == 0 {
				// Scaled, the last nonzero element underflowed: Dlarf's rows
				// (and so its columns, and whether y is one) end earlier.
				for last > i && ci[last] == 0 {
					last--
				}
				cs, lastCol = reflected(a, m, k, i, last, y, colsBuf[:0])
				ws = w[:len(cs)]
				projectAll(cs, ci[i+1:last+1], ws)
			}
		} else {
			projectAll(cs, ci[i+1:last+1], ws)
		}
		v := ci[i+1 : last+1]
		negTau := -t
		j := 0
		if lastCol > i && m-(i+1) > 1 {
			// Column i+1 is cs[0] (its rows i to last): its norm below its
			// diagonal, for reflector i+1, is summed as it is written (its
			// rows from i+2 on), then over the rows past last, which
			// reflector i leaves alone.
			var nrm l2norm
			switch {
			case len(cs) >= 4:
				nrm = reflect4Norm(cs[0], cs[1], cs[2], cs[3], v, negTau, ws[:4])
				j = 4
			case len(cs) >= 2:
				nrm = reflect2Norm(cs[0], cs[1], v, negTau, ws[0], ws[1])
				j = 2
			default:
				nrm = reflectNorm(cs[0], v, negTau, ws[0])
				j = 1
			}
			for _, x := range col(i + 1)[max(last+1, i+2):] {
				nrm = nrm.add(x)
			}
			next, haveNext = nrm, true
		}
		for ; j+4 <= len(cs); j += 4 {
			reflect4(cs[j], cs[j+1], cs[j+2], cs[j+3], v, negTau, ws[j:j+4])
		}
		if j+2 <= len(cs) {
			reflect2(cs[j], cs[j+1], v, negTau, ws[j], ws[j+1])
			j += 2
		}
		if j < len(cs) {
			reflect(cs[j], v, negTau, ws[j])
		}
	}
}

// reflected is the columns reflector i (of rows i to last) applies to,
// appended to cs: a's columns right of i up to the last one with a
// nonzero element in those rows (Dlarf's Iladlc), then y where Dorm2r's
// Dlarf would apply it (Iladlc of its one column: a nonzero element in
// those rows), each as its rows i to last; and the last of a's columns
// among them (i: none).
func reflected(a []float64, m, k, i, last int, y []float64, cs [][]float64) ([][]float64, int) {
	col := func(j int) []float64 { return a[j*m : (j+1)*m : (j+1)*m] }
	lastCol := i
	if i < k-1 {
		if c := col(k - 1); c[i] != 0 || c[last] != 0 {
			lastCol = k - 1
		} else {
			for r := i; r <= last; r++ {
				for j := k - 1; j > lastCol; j-- {
					if col(j)[r] != 0 {
						lastCol = j
						break
					}
				}
			}
		}
	}
	for j := i + 1; j <= lastCol; j++ {
		cs = append(cs, col(j)[i:last+1])
	}
	if y != nil {
		if yi := y[i : last+1]; yi[0] != 0 || yi[len(yi)-1] != 0 || anyNonzero(yi) {
			cs = append(cs, yi)
		}
	}
	return cs, lastCol
}

// projectAll is w = Csᵀv (Dlarf's Dgemv), up to four columns side by side.
func projectAll(cs [][]float64, v, ws []float64) {
	j := 0
	for ; j+4 <= len(cs); j += 4 {
		ws[j], ws[j+1], ws[j+2], ws[j+3] = project4(cs[j], cs[j+1], cs[j+2], cs[j+3], v)
	}
	if j+2 <= len(cs) {
		ws[j], ws[j+1] = project2(cs[j], cs[j+1], v)
		j += 2
	}
	if j < len(cs) {
		ws[j] = project(cs[j], v)
	}
}

// projectScaling is projectAll of v once scaled by f (Dscal: each element
// multiplied and stored), scaled in the pass that projects the first
// columns on it (each column's sum is its own: which columns go side by
// side changes no digit).
func projectScaling(cs [][]float64, v []float64, f float64, ws []float64) {
	switch len(cs) {
	case 0:
		scale(v, f)
	case 1:
		ws[0] = projectScaled(cs[0], v, f)
	case 2, 3:
		ws[0], ws[1] = project2Scaled(cs[0], cs[1], v, f)
		projectAll(cs[2:], v, ws[2:])
	default:
		ws[0], ws[1], ws[2], ws[3] = project4Scaled(cs[0], cs[1], cs[2], cs[3], v, f)
		projectAll(cs[4:], v, ws[4:])
	}
}

// projectScaled is project of c on v scaled by f, v scaled in place as
// it is read (scale's product).
func projectScaled(c, v []float64, f float64) float64 {
	c = c[:len(v)+1]
	acc := 0.0
	acc += float64(1 * c[0])
	c = c[1:]
	for r := range v {
		vr := v[r] * f
		v[r] = vr
		acc += float64(vr * c[r])
	}
	return acc
}

// projectScaledKeep is projectScaled leaving v as it was.
func projectScaledKeep(c, v []float64, f float64) float64 {
	c = c[:len(v)+1]
	acc := 0.0
	acc += float64(1 * c[0])
	c = c[1:]
	for r, x := range v {
		vr := x * f
		acc += float64(vr * c[r])
	}
	return acc
}

// reflectScaled is reflect with v_r = v[r]·f formed as it is read.
func reflectScaled(c, v []float64, f, negTau, wj float64) {
	c = c[:len(v)+1]
	c[0] += float64(wj * (negTau * 1))
	c = c[1:]
	for r, x := range v {
		vr := x * f
		c[r] += float64(wj * (negTau * vr))
	}
}

// project2Scaled is projectScaled of two columns, side by side.
func project2Scaled(c0, c1, v []float64, f float64) (float64, float64) {
	n := len(v) + 1
	c0, c1 = c0[:n], c1[:n]
	a0, a1 := 0.0, 0.0
	a0 += float64(1 * c0[0])
	a1 += float64(1 * c1[0])
	c0, c1 = c0[1:], c1[1:]
	for r := range v {
		vr := v[r] * f
		v[r] = vr
		a0 += float64(vr * c0[r])
		a1 += float64(vr * c1[r])
	}
	return a0, a1
}

// project4Scaled is projectScaled of four columns, side by side.
func project4Scaled(c0, c1, c2, c3, v []float64, f float64) (float64, float64, float64, float64) {
	n := len(v) + 1
	c0, c1, c2, c3 = c0[:n], c1[:n], c2[:n], c3[:n]
	a0, a1, a2, a3 := 0.0, 0.0, 0.0, 0.0
	a0 += float64(1 * c0[0])
	a1 += float64(1 * c1[0])
	a2 += float64(1 * c2[0])
	a3 += float64(1 * c3[0])
	c0, c1, c2, c3 = c0[1:], c1[1:], c2[1:], c3[1:]
	for r := range v {
		vr := v[r] * f
		v[r] = vr
		a0 += float64(vr * c0[r])
		a1 += float64(vr * c1[r])
		a2 += float64(vr * c2[r])
		a3 += float64(vr * c3[r])
	}
	return a0, a1, a2, a3
}

// reflectNorm is reflect, returning the 2-norm's running sum (l2norm) of
// c's elements from its third on (the column's rows below the next
// reflector's diagonal) as written.
func reflectNorm(c, v []float64, negTau, wj float64) l2norm {
	c = c[:len(v)+1]
	c[0] += float64(wj * (negTau * 1))
	c = c[1:]
	nrm := newL2norm()
	for r, vr := range v {
		u := c[r] + float64(wj*(negTau*vr))
		c[r] = u
		if r > 0 {
			nrm = nrm.add(u)
		}
	}
	return nrm
}

// reflect2Norm is reflect2 with reflectNorm's sum of its first column.
func reflect2Norm(c0, c1, v []float64, negTau, w0, w1 float64) l2norm {
	n := len(v) + 1
	c0, c1 = c0[:n], c1[:n]
	t := negTau * 1
	c0[0] += float64(w0 * t)
	c1[0] += float64(w1 * t)
	c0, c1 = c0[1:], c1[1:]
	nrm := newL2norm()
	for r, vr := range v {
		t := negTau * vr
		u := c0[r] + float64(w0*t)
		c0[r] = u
		c1[r] += float64(w1 * t)
		if r > 0 {
			nrm = nrm.add(u)
		}
	}
	return nrm
}

// reflect4Norm is reflect4 with reflectNorm's sum of its first column.
func reflect4Norm(c0, c1, c2, c3, v []float64, negTau float64, w []float64) l2norm {
	n := len(v) + 1
	c0, c1, c2, c3 = c0[:n], c1[:n], c2[:n], c3[:n]
	w0, w1, w2, w3 := w[0], w[1], w[2], w[3]
	t := negTau * 1
	c0[0] += float64(w0 * t)
	c1[0] += float64(w1 * t)
	c2[0] += float64(w2 * t)
	c3[0] += float64(w3 * t)
	c0, c1, c2, c3 = c0[1:], c1[1:], c2[1:], c3[1:]
	nrm := newL2norm()
	for r, vr := range v {
		t := negTau * vr
		u := c0[r] + float64(w0*t)
		c0[r] = u
		c1[r] += float64(w1 * t)
		c2[r] += float64(w2 * t)
		c3[r] += float64(w3 * t)
		if r > 0 {
			nrm = nrm.add(u)
		}
	}
	return nrm
}

// project is Dgemv's Σ_r v_r c_r (Trans, one column) with v_0 = 1 and
// v_r = v[r−1] after it: the sum from 0 in the rows' order.
func project(c, v []float64) float64 {
	c = c[:len(v)+1]
	acc := 0.0
	acc += float64(1 * c[0])
	c = c[1:]
	for r, vr := range v {
		acc += float64(vr * c[r])
	}
	return acc
}

// project4 is project of four columns, side by side.
func project4(c0, c1, c2, c3, v []float64) (float64, float64, float64, float64) {
	n := len(v) + 1
	c0, c1, c2, c3 = c0[:n], c1[:n], c2[:n], c3[:n]
	a0, a1, a2, a3 := 0.0, 0.0, 0.0, 0.0
	a0 += float64(1 * c0[0])
	a1 += float64(1 * c1[0])
	a2 += float64(1 * c2[0])
	a3 += float64(1 * c3[0])
	c0, c1, c2, c3 = c0[1:], c1[1:], c2[1:], c3[1:]
	for r, vr := range v {
		a0 += float64(vr * c0[r])
		a1 += float64(vr * c1[r])
		a2 += float64(vr * c2[r])
		a3 += float64(vr * c3[r])
	}
	return a0, a1, a2, a3
}

// project2 is project of two columns, side by side.
func project2(c0, c1, v []float64) (float64, float64) {
	n := len(v) + 1
	c0, c1 = c0[:n], c1[:n]
	a0, a1 := 0.0, 0.0
	a0 += float64(1 * c0[0])
	a1 += float64(1 * c1[0])
	c0, c1 = c0[1:], c1[1:]
	for r, vr := range v {
		a0 += float64(vr * c0[r])
		a1 += float64(vr * c1[r])
	}
	return a0, a1
}

// reflect4 is reflect of four columns, w their four wj, side by side:
// −τ·v_r is formed once a row, as Dger forms it.
func reflect4(c0, c1, c2, c3, v []float64, negTau float64, w []float64) {
	n := len(v) + 1
	c0, c1, c2, c3 = c0[:n], c1[:n], c2[:n], c3[:n]
	w0, w1, w2, w3 := w[0], w[1], w[2], w[3]
	t := negTau * 1
	c0[0] += float64(w0 * t)
	c1[0] += float64(w1 * t)
	c2[0] += float64(w2 * t)
	c3[0] += float64(w3 * t)
	c0, c1, c2, c3 = c0[1:], c1[1:], c2[1:], c3[1:]
	for r, vr := range v {
		t := negTau * vr
		c0[r] += float64(w0 * t)
		c1[r] += float64(w1 * t)
		c2[r] += float64(w2 * t)
		c3[r] += float64(w3 * t)
	}
}

// reflect2 is reflect of two columns, side by side.
func reflect2(c0, c1, v []float64, negTau, w0, w1 float64) {
	n := len(v) + 1
	c0, c1 = c0[:n], c1[:n]
	t := negTau * 1
	c0[0] += float64(w0 * t)
	c1[0] += float64(w1 * t)
	c0, c1 = c0[1:], c1[1:]
	for r, vr := range v {
		t := negTau * vr
		c0[r] += float64(w0 * t)
		c1[r] += float64(w1 * t)
	}
}

// reflect is Dger's c_r += wj·(−τ·v_r) with v_0 = 1 and v_r = v[r−1]
// after it.
func reflect(c, v []float64, negTau, wj float64) {
	c = c[:len(v)+1]
	c[0] += float64(wj * (negTau * 1))
	c = c[1:]
	for r, vr := range v {
		c[r] += float64(wj * (negTau * vr))
	}
}

// scale is Dscal of x by s.
func scale(x []float64, s float64) {
	if s == 0 {
		clear(x)
		return
	}
	for i := range x {
		x[i] *= s
	}
}

// l2normOf is Dnrm2 of x.
func l2normOf(x []float64) float64 {
	if len(x) == 1 {
		return math.Abs(x[0])
	}
	s := newL2norm()
	for _, v := range x {
		s = s.add(v)
	}
	return s.norm()
}

// l2norm is Dnrm2's running scaled sum of squares (gonum's
// internal/asm/f64 L2NormInc: scale the largest |x| so far, sumsq the sum
// of (|x|/scale)², one division an element, each square rounded before
// it is added, as its amd64 assembly does). It is a value, added to by
// add, so that a loop keeps it in registers.
type l2norm struct {
	scale, sumsq float64
	nan          bool
}

func newL2norm() l2norm { return l2norm{sumsq: 1} }

func (s l2norm) add(v float64) l2norm {
	if v == 0 {
		return s
	}
	absxi := math.Abs(v)
	if absxi != absxi {
		s.nan = true
		return s
	}
	if s.scale < absxi {
		q := s.scale / absxi
		s.sumsq = 1 + float64(s.sumsq*q*q)
		s.scale = absxi
	} else {
		q := absxi / s.scale
		s.sumsq += float64(q * q)
	}
	return s
}

func (s l2norm) norm() float64 {
	switch {
	case s.nan:
		return math.NaN()
	case math.IsInf(s.scale, 1):
		return math.Inf(1)
	}
	return s.scale * math.Sqrt(s.sumsq)
}

func anyNonzero(x []float64) bool {
	for _, v := range x {
		if v != 0 {
			return true
		}
	}
	return false
}
