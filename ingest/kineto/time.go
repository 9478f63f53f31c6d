package kineto

import "math"

// microsToNanos converts a JSON number of microseconds ("1712195495505543.250",
// "1695835542514261", "1.7e+15") to integer nanoseconds exactly, from its
// decimal text: a float64 cannot hold a 2024 epoch timestamp in µs to the
// nanosecond (its step there is 0.25 µs, docs/kineto.md). Digits below the
// nanosecond are rounded half away from zero. ok is false for a value that
// does not fit in int64 nanoseconds.
func microsToNanos(b []byte) (ns int64, ok bool) {
	i, neg := 0, false
	if i < len(b) && b[i] == '-' {
		neg, i = true, i+1
	}
	// mant holds up to 19 significant digits (below 10^19 < 2^64); exp10 is the power of ten
	// that scales it to nanoseconds (µs → ns is 10^3).
	var mant uint64
	exp10 := 3
	digits := 0
	roundUp := false
	dropped := false
	add := func(c byte, frac bool) {
		d := uint64(c - '0')
		if digits == 0 && d == 0 {
			if frac {
				exp10--
			}
			return
		}
		if digits < 19 {
			mant = mant*10 + d
			digits++
			if frac {
				exp10--
			}
			return
		}
		if !dropped {
			roundUp = d >= 5
			dropped = true
		}
		if !frac {
			exp10++
		}
	}
	start := i
	for i < len(b) && b[i] >= '0' && b[i] <= '9' {
		add(b[i], false)
		i++
	}
	if i == start {
		return 0, false
	}
	if i < len(b) && b[i] == '.' {
		i++
		for i < len(b) && b[i] >= '0' && b[i] <= '9' {
			add(b[i], true)
			i++
		}
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		eneg := false
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			eneg, i = b[i] == '-', i+1
		}
		e := 0
		for i < len(b) && b[i] >= '0' && b[i] <= '9' {
			if e < 10000 {
				e = e*10 + int(b[i]-'0')
			}
			i++
		}
		if eneg {
			e = -e
		}
		exp10 += e
	}
	if i != len(b) {
		return 0, false
	}
	if mant == 0 {
		return 0, true
	}
	for exp10 > 0 {
		if mant > math.MaxInt64/10 {
			return 0, false
		}
		mant *= 10
		exp10--
		roundUp = false
	}
	for exp10 < 0 {
		if exp10 < -19 {
			return 0, true
		}
		roundUp = mant%10 >= 5
		mant /= 10
		exp10++
	}
	if roundUp {
		mant++
	}
	if mant > math.MaxInt64 {
		return 0, false
	}
	if neg {
		return -int64(mant), true
	}
	return int64(mant), true
}
