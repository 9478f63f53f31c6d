package report

import (
	"encoding/binary"
	"math"
	"math/bits"
)

// appendShortestFixed appends strconv.AppendFloat(b, v, 'g', -1, 64) for
// 10⁻⁴ ≤ |v| < 10⁶, where 'g' writes the shortest digits that read back as
// v without an exponent: the samples' values that are not a whole number of
// nanoseconds in milliseconds (TPOT's quotients, 17 digits), a tenth of
// strconv's cost there being its general path.
//
// v is m/2^s, m < 2⁵³ and 33 ≤ s ≤ 66 in that range, and the reals that
// round to v (ties to even) are those between its neighbours' midpoints,
// (4m−2)/2^(s+2) to (4m+2)/2^(s+2) ((4m−1) below a power of two, whose
// lower neighbour is nearer), ends included when m is even. The shortest
// decimal among them has the fewest decimals J (all of them have the same
// integer part's length, or the interval holds a power of ten, which is
// then the one of fewest digits and of J the least), and there is one with
// J decimals exactly when an integer t lies between the ends times 10^J,
// which holds for every J from the least on: so J is found going down from
// one that must hold, where 10^−J is under the interval's width. Of several
// t, the nearest v·10^J is taken, an exact half to the even one, as
// strconv's shortest does. With S = s+2 ≤ 68 and J ≤ 21, every product
// (below 2⁵⁵·10²¹ < 2¹²⁵) is exact in 128 bits. TestAppendShortestFixed
// checks it against strconv.
func appendShortestFixed(b []byte, v float64) []byte {
	u := math.Float64bits(v)
	if u>>63 != 0 {
		b = append(b, '-')
	}
	frac := u & (1<<52 - 1)
	m := frac | 1<<52
	S := uint(1075-int(u>>52&0x7ff)) + 2
	lo, hi := 4*m-2, 4*m+2
	if frac == 0 {
		lo = 4*m - 1
	}
	inclusive := m&1 == 0
	J := shortestStart[S]
	tlo, thi, _ := candidates(lo, hi, S, J, inclusive)
	for J > 0 {
		l, h, ok := candidates(lo, hi, S, J-1, inclusive)
		if !ok {
			break
		}
		J, tlo, thi = J-1, l, h
	}
	// The nearest of tlo..thi to 4m·10^J/2^S: its floor, rounded up past
	// one half (q2's last bit), or at one half when odd.
	ph, pl := mulPow10(4*m, J)
	q2, exact := shiftRight128(ph, pl, S-1)
	t := q2 >> 1
	if q2&1 == 1 && (!exact || t&1 == 1) {
		t++
	}
	t = min(max(t, tlo), thi)
	return appendFixedPoint(b, t, J)
}

// appendFixedPoint appends t/10^J for t < 10¹⁸ whose last digit is not
// zero when J > 0: the integer part without leading zeros ("0" for none),
// then a point and J decimals.
func appendFixedPoint(b []byte, t uint64, J int) []byte {
	// t's 18 digits, leading zeros included, in three 8-byte stores of
	// six each (24 bytes: the last two run past).
	var d [26]byte
	binary.LittleEndian.PutUint64(d[0:], sixDigits(uint32(t/1e12)))
	binary.LittleEndian.PutUint64(d[6:], sixDigits(uint32(t/1e6%1e6)))
	binary.LittleEndian.PutUint64(d[12:], sixDigits(uint32(t%1e6)))
	digits := d[:18]
	if J >= 18 {
		b = append(b, "0."...)
		for range J - 18 {
			b = append(b, '0')
		}
		return append(b, digits...)
	}
	ip, fp := digits[:18-J], digits[18-J:]
	lead := 0
	for lead < len(ip)-1 && ip[lead] == '0' {
		lead++
	}
	b = append(b, ip[lead:]...)
	if J > 0 {
		b = append(b, '.')
		b = append(b, fp...)
	}
	return b
}

// candidates returns the least and the greatest integer t with
// lo/2^S ≤ t/10^J ≤ hi/2^S (< at an end when not inclusive), and whether
// there is one.
func candidates(lo, hi uint64, S uint, J int, inclusive bool) (tlo, thi uint64, ok bool) {
	h, l := mulPow10(lo, J)
	tlo, exact := shiftRight128(h, l, S)
	if !exact || !inclusive {
		tlo++ // the ceiling, or past an excluded end
	}
	h, l = mulPow10(hi, J)
	thi, exact = shiftRight128(h, l, S)
	if exact && !inclusive {
		if thi == 0 {
			return 0, 0, false
		}
		thi--
	}
	return tlo, thi, tlo <= thi
}

// mulPow10 is x·10^J as 128 bits, for a product below 2¹²⁸.
func mulPow10(x uint64, J int) (hi, lo uint64) {
	if J < len(pow10) {
		return bits.Mul64(x, pow10[J])
	}
	hi, lo = bits.Mul64(x, pow10[len(pow10)-1])
	f := pow10[J-len(pow10)+1]
	h2, l2 := bits.Mul64(lo, f)
	return hi*f + h2, l2
}

// shiftRight128 is (hi, lo) >> S, for 1 ≤ S < 128 and a quotient below
// 2⁶⁴, and whether nothing was shifted out that was not zero.
func shiftRight128(hi, lo uint64, S uint) (q uint64, exact bool) {
	if S < 64 {
		return hi<<(64-S) | lo>>S, lo&(1<<S-1) == 0
	}
	return hi >> (S - 64), lo == 0 && hi&(1<<(S-64)-1) == 0
}

// pow10 are 10⁰ to 10¹⁹.
var pow10 = func() (p [20]uint64) {
	p[0] = 1
	for i := 1; i < len(p); i++ {
		p[i] = p[i-1] * 10
	}
	return p
}()

// shortestStart[S] is the least J with 10^J > 2^S/3, for S up to 68: where
// 10^−J is under the narrowest interval's width, 3/2^S, so that the
// interval holds a multiple of it.
var shortestStart = func() (t [69]int) {
	for S := range t {
		J := 0
		// 10^J > 2^S/3 ⇔ 3·10^J > 2^S, compared as floats far from ties
		// (a power of ten times 3 is no power of two).
		for 3*math.Pow(10, float64(J)) <= math.Ldexp(1, S) {
			J++
		}
		t[S] = J
	}
	return t
}()
