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
func householderQR(a []float64, m, k int, tau, y, w []float64) {
	a = a[:m*k]
	w = w[:k]
	if y != nil {
		y = y[:m]
	}
	col := func(j int) []float64 { return a[j*m : (j+1)*m : (j+1)*m] }
	var colsBuf [maxFusedQR][]float64
	for i := 0; i < k; i++ {
		ci := col(i)
		alpha := ci[i]
		beta, t := alpha, 0.0
		if m-i > 1 {
			// Dlarfg(m−i, α, a[i+1:, i]).
			x := ci[i+1:]
			xnorm := l2normOf(x)
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
				scale(x, 1/(alpha-beta))
				for range knt {
					beta *= qrSafmin
				}
			}
		}
		ci[i] = beta
		tau[i] = t
		if t == 0 {
			continue // H_i is the identity: Dlarf does nothing
		}
		// Dlarf's rows: i to v's last nonzero element.
		last := m - 1
		for last > i && ci[last] == 0 {
			last--
		}
		v := ci[i+1 : last+1]
		// Dlarf's columns: up to the last one with a nonzero element in
		// those rows (Iladlc).
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
		// The columns reflector i applies to, and y where Dorm2r's Dlarf
		// would apply it (Iladlc of its one column: a nonzero element in
		// those rows).
		cs := colsBuf[:0]
		for j := i + 1; j <= lastCol; j++ {
			cs = append(cs, col(j)[i:last+1])
		}
		if y != nil {
			if yi := y[i : last+1]; yi[0] != 0 || yi[len(yi)-1] != 0 || anyNonzero(yi) {
				cs = append(cs, yi)
			}
		}
		ws := w[:len(cs)]
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
		negTau := -t
		j = 0
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
