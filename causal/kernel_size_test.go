package causal

import (
	"testing"
	"unsafe"
)

// A kernel row is 32 bytes: a run's rows are the kernel view's largest
// table (millions on a long run), and its step's batch measures are read
// from the step, not copied into each row (docs/design.md, "What the
// analysis holds on top").
func TestKernelRowSize(t *testing.T) {
	if got := unsafe.Sizeof(kernelRow{}); got != 32 {
		t.Errorf("kernelRow is %d bytes, want 32", got)
	}
}
