package record

import (
	"fmt"
	"sync/atomic"

	"github.com/apache/arrow-go/v18/arrow/memory"
)

// tableReadLimits bound what arrow-go may allocate while one capture table
// is read (docs/record.md, "Reading a capture"):
//   - one allocation: at most maxUncompressedBytes (256 MiB);
//   - held at once: at most liveBytes (1 GiB) — a batch is released
//     before the next is read, so this is one batch, whatever the number
//     of columns a crafted schema adds;
//   - allocated over the whole read: at most max(minTotalBytes,
//     totalPerFileByte × the file's size) — 128× the file, at least 1 GiB:
//     a table of many small valid batches, each zstd-compressed from a
//     much larger one, cannot make a reader decompress without end.
//
// The recorder's own tables stay far inside them: its batches are at most
// 8 MiB or one payload (64 MiB), and OTLP payloads compress 5–25× (23× for
// the repetitive spans of TestTableReadBudget).
type tableReadLimits struct {
	oneBytes, liveBytes, minTotalBytes, totalPerFileByte int64
}

var defaultTableReadLimits = tableReadLimits{
	oneBytes:         maxUncompressedBytes,
	liveBytes:        1 << 30,
	minTotalBytes:    1 << 30,
	totalPerFileByte: 128,
}

// total is the allocation budget for reading a stream of fileBytes (-1 when
// unknown: the floor).
func (l tableReadLimits) total(fileBytes int64) int64 {
	if fileBytes > 0 && fileBytes <= (1<<62)/max(l.totalPerFileByte, 1) {
		return max(l.minTotalBytes, l.totalPerFileByte*fileBytes)
	}
	if fileBytes > 0 {
		return 1 << 62
	}
	return l.minTotalBytes
}

// boundedAllocator refuses arrow allocations past a table read's limits.
// It is the last line behind checkedStream: arrow-go sizes buffers from
// lengths inside the file (a compressed buffer's uncompressed-size prefix
// among them), and an allocation the runtime cannot satisfy is a fatal
// error that no recover() catches, while a panic here is recovered by
// readStream and reported as a corrupt batch naming the table. Issue 31's
// 2 KB otlp.arrows declared a 144 TB buffer past checkedStream
// (testdata/fuzz/FuzzIPCStream).
type boundedAllocator struct {
	memory.Allocator
	one, maxLive, maxTotal int64
	perFileByte, minTotal  int64 // what maxTotal was made of, for the message
	live, total, peak      atomic.Int64
}

func newBoundedAllocator(l tableReadLimits, fileBytes int64) *boundedAllocator {
	return &boundedAllocator{Allocator: memory.DefaultAllocator,
		one: l.oneBytes, maxLive: l.liveBytes, maxTotal: l.total(fileBytes),
		perFileByte: l.totalPerFileByte, minTotal: l.minTotalBytes}
}

// take accounts for grow more bytes in one allocation of n.
func (a *boundedAllocator) take(n, grow int) {
	if n < 0 || int64(n) > a.one {
		panic(fmt.Sprintf("arrow buffer of %d bytes declared, over the %d-byte limit", n, a.one))
	}
	if grow <= 0 {
		a.live.Add(int64(grow))
		return
	}
	if live := a.live.Add(int64(grow)); live > a.maxLive {
		a.live.Add(-int64(grow))
		panic(fmt.Sprintf("arrow buffers of %d bytes held at once, over the %d-byte limit for one table", live, a.maxLive))
	} else if live > a.peak.Load() {
		a.peak.Store(live) // the reader is one goroutine: no lost update that matters
	}
	if total := a.total.Add(int64(grow)); total > a.maxTotal {
		a.live.Add(-int64(grow))
		a.total.Add(-int64(grow))
		panic(fmt.Sprintf("reading the table would allocate %d bytes, over the %d bytes a table of its size may (%d× the file, at least %d MiB)",
			total, a.maxTotal, a.perFileByte, a.minTotal>>20))
	}
}

func (a *boundedAllocator) Allocate(n int) []byte {
	a.take(n, n)
	return a.Allocator.Allocate(n)
}

func (a *boundedAllocator) Reallocate(n int, b []byte) []byte {
	a.take(n, n-len(b))
	return a.Allocator.Reallocate(n, b)
}

func (a *boundedAllocator) Free(b []byte) {
	a.live.Add(-int64(len(b)))
	a.Allocator.Free(b)
}
