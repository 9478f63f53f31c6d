//go:build !noasm && !gccgo && !safe

package stat

// gonumUnfused says gonum's BLAS kernels (gonum.org/v1/gonum/internal/asm/f64)
// are its amd64 assembly here, which rounds each product before adding it:
// the arithmetic householderQR and unfusedQR repeat, so the tests compare
// them with gonum's Geqrf and Ormqr to the bit.
const gonumUnfused = true
