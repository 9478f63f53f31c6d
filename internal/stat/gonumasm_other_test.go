//go:build !amd64 || noasm || gccgo || safe

package stat

// gonumUnfused says gonum's BLAS kernels are its Go versions here
// (gonum.org/v1/gonum/internal/asm/f64's noasm files), whose
// `a[i] += alpha * x[i]` a compiler may fuse into one multiply-add (arm64,
// ppc64le, s390x do): their last digits may then differ from householderQR's,
// which never fuses, so the tests compare householderQR with unfusedQR alone.
const gonumUnfused = false
