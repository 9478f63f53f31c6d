//go:build !amd64 || amd64.v3

package causal

import "math"

// expm1x3 is math.Expm1 of each argument. expm1.go's copy of Go's steps
// gives math.Expm1's digits only where neither is fused: on s390x
// math.Expm1 is assembly, and where the compiler forms fused
// multiply-adds (GOAMD64=v3, arm64, ppc64le, riscv64, ...) it forms them
// in math/expm1.go and in the copy as it chooses, not necessarily alike.
func expm1x3(x1, x2, x3 float64) (float64, float64, float64) {
	return math.Expm1(x1), math.Expm1(x2), math.Expm1(x3)
}

// expm1x6 is math.Expm1 of each argument (see expm1x3).
func expm1x6(x1, x2, x3, x4, x5, x6 float64) (float64, float64, float64, float64, float64, float64) {
	return math.Expm1(x1), math.Expm1(x2), math.Expm1(x3), math.Expm1(x4), math.Expm1(x5), math.Expm1(x6)
}
