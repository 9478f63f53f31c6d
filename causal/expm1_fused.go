package causal

import "math"

// expm1x3 is math.Expm1 of each argument: math.Expm1 is assembly here,
// and expm1.go's copy of Go's steps would not give its digits.
func expm1x3(x1, x2, x3 float64) (float64, float64, float64) {
	return math.Expm1(x1), math.Expm1(x2), math.Expm1(x3)
}

// expm1x6 is math.Expm1 of each argument (see expm1x3).
func expm1x6(x1, x2, x3, x4, x5, x6 float64) (float64, float64, float64, float64, float64, float64) {
	return math.Expm1(x1), math.Expm1(x2), math.Expm1(x3), math.Expm1(x4), math.Expm1(x5), math.Expm1(x6)
}
