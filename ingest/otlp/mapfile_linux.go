package otlp

import (
	"bytes"
	"errors"
	"math"
	"os"
	"runtime/debug"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/llmprof/llmprof/ingest"
)

// mappedFile is a regular input file mapped read-only, which the framed
// reader decodes in place (byteFrames): the pages are the page cache's own,
// where read(2) copied every byte into a buffer first. Nothing the decoder
// keeps points into it (every string it keeps is a copy: state.intern), so
// it is unmapped when the decode ends.
type mappedFile struct {
	data []byte
	// dropped is the offset below which the pages were given back.
	dropped int
}

// mapInput maps in's file when it can be read in place: a regular file,
// neither compressed nor transcoded, whose start is still the head the
// input was recognized by; nil otherwise (the input is then read as a
// stream, as before).
func mapInput(in *ingest.Input) *mappedFile {
	if in.Stream || in.Compression != ingest.CompressionNone || in.Encoding != ingest.EncodingUTF8 {
		return nil
	}
	path, done, err := in.LocalFile()
	if err != nil {
		return nil
	}
	defer done()
	f, err := os.Open(path)
	if err != nil {
		return nil
	}
	defer f.Close() // the mapping outlives the descriptor
	st, err := f.Stat()
	if err != nil || !st.Mode().IsRegular() || st.Size() <= 0 || st.Size() > math.MaxInt {
		return nil
	}
	data, err := unix.Mmap(int(f.Fd()), 0, int(st.Size()), unix.PROT_READ, unix.MAP_SHARED)
	if err != nil {
		return nil
	}
	m := &mappedFile{data: data}
	if !bytes.HasPrefix(data, in.Head) {
		m.close() // the file changed since it was recognized
		return nil
	}
	return m
}

// frames reads the mapping's records, giving back the pages of those
// decoded as it goes.
func (m *mappedFile) frames() frames { return &byteFrames{b: m.data, done: m.drop} }

// dropStep is how far the decode gets past the pages last given back
// before it gives back the next ones.
const dropStep = 1 << 20

// drop gives back the pages below off, which the decode is done with, a
// dropStep at a time: the mapping's pages count as the process's resident
// memory, which the memory budget governs (internal/spill), and a whole
// file mapped would count its whole size there. The page cache keeps them;
// read again, they would be mapped again.
func (m *mappedFile) drop(off int) {
	off &^= os.Getpagesize() - 1
	if off-m.dropped < dropStep {
		return
	}
	_ = unix.Madvise(m.data[m.dropped:off], unix.MADV_DONTNEED)
	m.dropped = off
}

func (m *mappedFile) close() {
	if m.data != nil {
		_ = unix.Munmap(m.data)
		m.data = nil
	}
}

// errShrank is what a decode of a mapping returns when the file was cut
// short under it.
var errShrank = errors.New("the file was truncated while it was read")

// guard runs decode, turning the fault of a read past the end of a file
// that another process truncated after it was mapped (SIGBUS) into
// errShrank, where it would crash the process. Any other fault is a bug
// and panics on.
func (m *mappedFile) guard(decode func() error) (err error) {
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer func() {
		if v := recover(); v != nil {
			if !m.faultIn(v) {
				panic(v)
			}
			err = errShrank
		}
	}()
	return decode()
}

// faultIn reports whether v, a recovered panic, is a memory fault inside
// the mapping.
func (m *mappedFile) faultIn(v any) bool {
	f, ok := v.(interface{ Addr() uintptr })
	if !ok || len(m.data) == 0 {
		return false
	}
	base := uintptr(unsafe.Pointer(unsafe.SliceData(m.data)))
	return f.Addr() >= base && f.Addr()-base < uintptr(len(m.data))
}
