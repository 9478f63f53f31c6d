package spill

import (
	"bytes"
	"fmt"
	"os"
	"strconv"

	"golang.org/x/sys/unix"
)

// A mapping is one spill file mapped shared into memory; the file itself
// was deleted when it was made, so it goes when the mapping does.
type mapping struct{ mem []byte }

func tempDir() string { return os.TempDir() }

// usable says why dir cannot hold spill files: it must be a directory on a
// file system whose pages can leave memory.
func usable(dir string) error {
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil {
		return fmt.Errorf("spill directory %s: %w", dir, err)
	}
	switch st.Type {
	case unix.TMPFS_MAGIC, unix.RAMFS_MAGIC:
		return fmt.Errorf("spill directory %s is in memory (tmpfs): its pages cannot leave memory; set TMPDIR to a directory on disk", dir)
	}
	return nil
}

// mapFile makes a deleted file of size bytes in dir and maps it. The file's
// blocks are allocated first (fallocate): a page of a sparse file written
// through a mapping when the disk is full is a SIGBUS, not an error, so a
// file system that cannot reserve them gets no table.
func mapFile(dir string, size int64) (mapping, error) {
	f, err := os.CreateTemp(dir, "llmprof-spill-*")
	if err != nil {
		return mapping{}, err
	}
	defer f.Close()
	if err := os.Remove(f.Name()); err != nil {
		return mapping{}, err
	}
	if err := unix.Fallocate(int(f.Fd()), 0, 0, size); err != nil {
		return mapping{}, fmt.Errorf("reserving %d bytes in %s: %w", size, dir, err)
	}
	mem, err := unix.Mmap(int(f.Fd()), 0, int(size), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		return mapping{}, err
	}
	return mapping{mem}, nil
}

// drop takes n bytes of the mapping from off out of the process. For a
// shared file mapping MADV_DONTNEED keeps the contents (madvise(2)): the
// next access maps the page again from the page cache or the file.
func (m mapping) drop(off, n int64) {
	_ = unix.Madvise(m.mem[off:off+n], unix.MADV_DONTNEED)
}

func (m mapping) unmap() { _ = unix.Munmap(m.mem) }

// resident reads the process's resident set from /proc/self/statm, kept
// open: one read a tick.
type resident struct {
	f    *os.File
	page int64
	buf  [128]byte
}

func newResident() *resident {
	f, _ := os.Open("/proc/self/statm")
	return &resident{f: f, page: int64(os.Getpagesize())}
}

// read returns the resident bytes, 0 when they cannot be read.
func (r *resident) read() int64 {
	if r.f == nil {
		return 0
	}
	n, err := r.f.ReadAt(r.buf[:], 0)
	if n == 0 && err != nil {
		return 0
	}
	// statm: size resident shared text lib data dt, in pages.
	f := bytes.Fields(r.buf[:n])
	if len(f) < 2 {
		return 0
	}
	pages, err := strconv.ParseInt(string(f[1]), 10, 64)
	if err != nil {
		return 0
	}
	return pages * r.page
}

func (r *resident) close() {
	if r.f != nil {
		r.f.Close()
	}
}
