package record

import (
	"fmt"

	"github.com/apache/arrow-go/v18/arrow/memory"
)

// boundedAllocator refuses any single arrow allocation above limit. It is
// the last line behind checkedStream: arrow-go sizes buffers from lengths
// inside the file (a compressed buffer's uncompressed-size prefix among
// them), and an allocation the runtime cannot satisfy is a fatal error that
// no recover() catches, while a panic here is recovered by readStream and
// reported as a corrupt batch naming the table. Issue 31's 2 KB otlp.arrows
// declared a 144 TB buffer past checkedStream (testdata/fuzz/FuzzIPCStream).
type boundedAllocator struct {
	memory.Allocator
	limit int
}

func (a boundedAllocator) check(n int) {
	if n < 0 || n > a.limit {
		panic(fmt.Sprintf("arrow buffer of %d bytes declared, over the %d-byte limit", n, a.limit))
	}
}

func (a boundedAllocator) Allocate(n int) []byte {
	a.check(n)
	return a.Allocator.Allocate(n)
}

func (a boundedAllocator) Reallocate(n int, b []byte) []byte {
	a.check(n)
	return a.Allocator.Reallocate(n, b)
}
