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
	// f is the file, kept open to ask its size (readable); fd is its
	// descriptor.
	f  *os.File
	fd int
	// dropped is the offset below which the pages were given back.
	dropped int
}

// mapInput maps in's file when it can be read in place: a regular file,
// neither compressed nor transcoded, whose start is still the head the
// input was recognized by; nil otherwise (the input is then read as a
// stream, as before).
func mapInput(in *ingest.Input) *mappedFile {
	path, ok := in.InPlace()
	if !ok {
		return nil
	}
	f, err := os.Open(path)
	if err != nil {
		return nil
	}
	st, err := f.Stat()
	if err != nil || !st.Mode().IsRegular() || st.Size() <= 0 || st.Size() > math.MaxInt {
		f.Close()
		return nil
	}
	// The head is read from the file, not the mapping: a file cut short
	// since the Stat would make a read of the mapping fault here, outside
	// guard.
	head := make([]byte, len(in.Head))
	if n, _ := f.ReadAt(head, 0); n < len(head) || !bytes.Equal(head, in.Head) {
		f.Close()
		return nil // the file changed since it was recognized
	}
	fd := int(f.Fd())
	data, err := unix.Mmap(fd, 0, int(st.Size()), unix.PROT_READ, unix.MAP_SHARED)
	if err != nil {
		f.Close()
		return nil
	}
	return &mappedFile{data: data, f: f, fd: fd}
}

// frames reads the mapping's records, giving back the pages of those
// decoded as it goes.
func (m *mappedFile) frames() frames {
	return &byteFrames{b: m.data, done: m.drop, readable: m.readable}
}

// readable returns how many of the n bytes at off can be read: all of
// them, unless the file was cut short under the mapping (logrotate's
// copytruncate, an exporter restarted), when it is the bytes before its new
// end; a read of a page past it would fault. It asks the file's size
// (fstat) once a record, so that a record cut short is found before any of
// it is decoded, as the stream reader finds it (readFramed's "truncated"
// warning, every record before it kept).
func (m *mappedFile) readable(off, n int) int {
	var st unix.Stat_t
	if err := unix.Fstat(m.fd, &st); err != nil || st.Size >= int64(off+n) {
		return n
	}
	return max(int(st.Size)-off, 0)
}

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
	if m.f != nil {
		m.f.Close()
		m.f = nil
	}
}

// errShrank is what a decode of a mapping returns when a page of it could
// not be read in the middle of a record: the file was cut short under it
// after readable had asked its size for that record (a rare race: the record's
// spans decoded so far must not be kept, so the whole input fails), or its
// file system could not read the page (an I/O error, a network file
// system).
var errShrank = errors.New("the file was truncated or could not be read while it was decoded")

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
