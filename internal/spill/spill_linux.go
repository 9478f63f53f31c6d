package spill

import (
	"bytes"
	"fmt"
	"os"
	"strconv"

	"golang.org/x/sys/unix"
)

// A mapping is one spill file mapped shared into memory; the file itself
// was deleted when it was made, so it goes when the mapping does. f stays
// open for the file to grow (grow).
type mapping struct {
	mem []byte
	f   *os.File
}

func tempDir() string { return os.TempDir() }

// usable says why dir cannot hold spill files: it must be a directory on a
// file system whose pages can leave memory and where a file's reserved
// blocks are enough to write it over and over (refusal).
func usable(dir string) error {
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil {
		return fmt.Errorf("spill directory %s: %w", dir, err)
	}
	// f_type is a 32-bit magic number; Statfs_t.Type is int32 on 32-bit
	// systems, int64 or uint32 elsewhere.
	if why := refusal(uint32(st.Type)); why != "" {
		return fmt.Errorf("spill directory %s %s; set TMPDIR to a directory on a local disk", dir, why)
	}
	return nil
}

// zfsMagic is ZFS's f_type (not in x/sys/unix: ZFS is not in the kernel).
const zfsMagic = 0x2fc12fc1

// refusal says why a file system of type fs (statfs's f_type) cannot hold
// spill files, "" when it can. A page written through the mapping after the
// file system has no room is a SIGBUS, which kills the process, so spilling
// needs every write to land in blocks reserved beforehand (mapFile's
// fallocate). A copy-on-write file system writes a block that was written
// before to a new block: what fallocate reserved covers the first write
// only, and the governor's drops let a table be written back and then
// rewritten (sorted in place). A network or FUSE file system may emulate
// fallocate or fail a write back after the page has left the process.
func refusal(fs uint32) string {
	switch fs {
	case unix.TMPFS_MAGIC, unix.RAMFS_MAGIC:
		return "is in memory (tmpfs): its pages cannot leave memory"
	case unix.BTRFS_SUPER_MAGIC, unix.BCACHEFS_SUPER_MAGIC, zfsMagic:
		return "is on a copy-on-write file system, where reserving a file's blocks does not reserve room to write them again"
	case unix.NFS_SUPER_MAGIC, unix.CIFS_SUPER_MAGIC, unix.SMB_SUPER_MAGIC, unix.SMB2_SUPER_MAGIC,
		unix.CEPH_SUPER_MAGIC, unix.V9FS_MAGIC, unix.AFS_SUPER_MAGIC, unix.AFS_FS_MAGIC, unix.FUSE_SUPER_MAGIC:
		return "is on a network or FUSE file system, where a write to a mapped page may fail after the page has left the process"
	}
	return ""
}

// mapFile makes a deleted file of size bytes in dir and maps it. The file's
// blocks are allocated first (fallocate): a page of a sparse file written
// through a mapping when the disk is full is a SIGBUS, not an error, so a
// file system that cannot reserve them gets no table. Then its zeros are
// written (writeZeros), so that the mapping's pages are in the page cache,
// ready to map, before the table is touched.
func mapFile(dir string, size int64) (mapping, error) {
	f, err := os.CreateTemp(dir, "llmprof-spill-*")
	if err != nil {
		return mapping{}, err
	}
	keep := false
	defer func() {
		if !keep {
			f.Close()
		}
	}()
	if err := os.Remove(f.Name()); err != nil {
		return mapping{}, err
	}
	if err := reserve(f, 0, size); err != nil {
		return mapping{}, fmt.Errorf("%s: %w", dir, err)
	}
	mem, err := unix.Mmap(int(f.Fd()), 0, int(size), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		return mapping{}, err
	}
	keep = true
	return mapping{mem, f}, nil
}

// reserve readies bytes from to to of f for a mapping: their blocks are
// allocated (fallocate) and their zeros written (writeZeros). It touches
// only the file, so the package's lock need not be held: for a large table
// it takes a while (the writes run at a few GB/s), and the governor takes
// the lock at every tick.
func reserve(f *os.File, from, to int64) error {
	if reserving != nil {
		reserving()
	}
	if err := unix.Fallocate(int(f.Fd()), 0, from, to-from); err != nil {
		return fmt.Errorf("reserving %d bytes: %w", to-from, err)
	}
	if err := writeZeros(f, from, to); err != nil {
		return fmt.Errorf("writing %d bytes: %w", to-from, err)
	}
	return nil
}

// reserving, when set (by a test), is called as reserve starts.
var reserving func()

// reserve readies the mapping's file for a mapping of size bytes (more than
// its length): the new part's blocks reserved and zeros written (reserve).
// The mapping is as it was; remap then extends it.
func (m mapping) reserve(size int64) error {
	if m.f == nil || size <= int64(len(m.mem)) {
		return fmt.Errorf("spill: cannot grow a mapping of %d bytes to %d", len(m.mem), size)
	}
	return reserve(m.f, int64(len(m.mem)), size)
}

// remap is the mapping at size bytes, its file reserved that far (reserve),
// its bytes kept: the mapping is moved or extended (mremap), its page table
// entries with it, so that no page written is faulted in again or copied.
// On an error the mapping is as it was.
func (m mapping) remap(size int64) (mapping, error) {
	mem, err := unix.Mremap(m.mem, int(size), unix.MREMAP_MAYMOVE)
	if err != nil {
		// The file keeps its reserved blocks past the mapping: the
		// table moves to a new one and this file goes with Free.
		return m, err
	}
	return mapping{mem, m.f}, nil
}

// writeZeros writes zeros over bytes from to to of f, zeroBlock at a time,
// through the page cache (pwrite), so that the file's pages there are in
// it, written, before the mapping touches them. Only mapped pages count in
// the resident set, and none is mapped here.
//
// A reserved block not written yet (fallocate's "unwritten" extent) made the
// first touch of each page a trip through the file system: the fault read
// the pages around it in (page_cache_ra_order, ext4_mpage_readpages: new
// folios, each block looked up, the folio zeroed), and the first write to a
// page prepared its buffers again (ext4_page_mkwrite, block_page_mkwrite:
// blocks looked up, new ones zeroed). And readahead made its folios as
// small as the touches were scattered, so a table read out of order was
// faulted in, dropped by the governor and faulted in again a few pages at
// a time. A write does that work for a whole block at once, and a fault then
// maps a folio already there, whole. On the 100 MiB OTLP dump of
// docs/otlp.md, analyze's page faults halved, its CPU fell by about a tenth
// and its sys time by a third; on bench/scale.sh's 112 MB run its CPU by an
// eighth and its sys time by half; no higher a peak RSS on either
// (docs/design.md, "Spilling", has the figures). What it costs besides: a
// table's room never touched is written too, and the whole table is in the
// page cache, dirty, from the start (not resident memory; under a cgroup
// limit, which counts the page cache, it is written back as the touched
// pages would be).
//
// On Linux 6.18 with ext4, where this was measured (kernels without large
// folios for ext4 make 4 KiB pages whatever the write), the page cache
// makes a file's folios the size of the write that creates them, and a
// fault maps the whole folio, so zeroBlock's size is how much of the table
// a touch makes resident: 2 MiB writes (the largest folio) cost the same
// CPU but raised the 100 MiB dump's peak by 2-3 MiB, 64 KiB ones saved
// nothing more.
func writeZeros(f *os.File, from, to int64) error {
	for off := from; off < to; off += int64(len(zeroBlock)) {
		if _, err := f.WriteAt(zeroBlock[:min(int64(len(zeroBlock)), to-off)], off); err != nil {
			return err
		}
	}
	return nil
}

// zeroBlock is the zeros writeZeros writes: never written itself, its pages
// read as the kernel's shared zero page, so it costs no resident memory.
var zeroBlock [256 << 10]byte

// drop takes n bytes of the mapping from off out of the process. For a
// shared file mapping MADV_DONTNEED only removes the page table entries: on
// Linux madvise_dontneed_free (mm/madvise.c) zaps the range, and for a
// page that is not anonymous zap_pte_range (mm/memory.c, through
// zap_present_folio_ptes in 6.x) moves the cleared entry's dirty bit to its
// page cache folio (folio_mark_dirty), so a byte
// written through the mapping is in the page cache, to be written to the
// file, not lost; the next access faults the page in again from the page
// cache or the file. (An anonymous or MAP_PRIVATE mapping would read zeros
// or the file's old bytes instead: mapFile maps MAP_SHARED.) A write racing
// with the drop either lands before the entry is cleared, and its dirty bit
// moves with it, or faults after, onto the same page cache page.
func (m mapping) drop(off, n int64) {
	_ = unix.Madvise(m.mem[off:off+n], unix.MADV_DONTNEED)
}

// dropRange takes a range of a mapping, whole pages, out of the process,
// as drop does.
func dropRange(b []byte) { _ = unix.Madvise(b, unix.MADV_DONTNEED) }

// pageSize is the system's page size: a drop takes whole pages.
var pageSize = os.Getpagesize()

// readResident reads the process's resident set now (resident.read), 0
// when it cannot.
func readResident() int64 {
	r := newResident()
	defer r.close()
	return r.read()
}

func (m mapping) unmap() {
	_ = unix.Munmap(m.mem)
	if m.f != nil {
		m.f.Close()
	}
}

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

// program is the executable's code and constant data: its mappings of the
// executable file (/proc/self/exe) that are not writable and whose pages
// the process has never written (smaps' "Anonymous: 0 kB"; a
// position-independent binary's relocated read-only data has, and is left
// alone). Their pages are the page cache's, like a spill table's: taking
// them out of the process (MADV_DONTNEED, which for a private file mapping
// without written pages drops the page table entries only) loses nothing,
// and the next instruction or constant read from one maps it in again.
//
// They are a third of what an analysis of bench/scale.sh's 112 MB run holds
// resident: 33 MiB of its ~100 (code up to 16 MiB, constant data 15 MiB —
// type data, the function tables the collector and the stack walks read),
// mapped by the first pass that runs them and kept, while the kernel fit
// running at the end needs a part.
// Dropped, they came back to 21–22 MiB (code 7–8 MiB, constants 7–14 MiB:
// a fault maps the page cache's whole folio, up to 2 MiB), and the room
// went to the spilled tables.
type program struct{ spans [][2]uintptr }

// programPages finds the program's droppable mappings in /proc/self/smaps;
// none when it cannot be read.
func programPages() program {
	exe, err := os.Readlink("/proc/self/exe")
	if err != nil {
		return program{}
	}
	data, err := os.ReadFile("/proc/self/smaps")
	if err != nil {
		return program{}
	}
	return parseProgram(data, exe)
}

// parseProgram reads smaps text for the mappings of the file exe that are
// not writable and have no anonymous pages.
func parseProgram(smaps []byte, exe string) program {
	var p program
	var cur [2]uintptr
	take := false
	for line := range bytes.Lines(smaps) {
		f := bytes.Fields(line)
		if len(f) == 0 {
			continue
		}
		if lo, hi, ok := bytes.Cut(f[0], []byte{'-'}); ok && len(f) >= 5 && len(f[1]) == 4 {
			// A mapping's header: range perms offset dev inode [path],
			// the path the rest of the line (it may hold spaces; a file
			// replaced since it was mapped ends in " (deleted)").
			take = false
			if f[1][1] != '-' || string(pathOf(line)) != exe {
				continue
			}
			a, err1 := strconv.ParseUint(string(lo), 16, 64)
			b, err2 := strconv.ParseUint(string(hi), 16, 64)
			if err1 != nil || err2 != nil || b <= a {
				continue
			}
			cur, take = [2]uintptr{uintptr(a), uintptr(b)}, true
			continue
		}
		if take && string(f[0]) == "Anonymous:" {
			if len(f) >= 2 && string(f[1]) == "0" {
				p.spans = append(p.spans, cur)
			}
			take = false
		}
	}
	return p
}

// pathOf is the path of an smaps or maps header line: what follows its
// fifth field, without the spaces around it.
func pathOf(line []byte) []byte {
	rest := line
	for range 5 {
		rest = bytes.TrimLeft(rest, " ")
		i := bytes.IndexByte(rest, ' ')
		if i < 0 {
			return nil
		}
		rest = rest[i:]
	}
	return bytes.TrimSpace(rest)
}

// drop takes the program's pages out of the process.
func (p program) drop() {
	for _, s := range p.spans {
		// By address: the mappings are not Go memory.
		_, _, _ = unix.Syscall(unix.SYS_MADVISE, s[0], s[1]-s[0], unix.MADV_DONTNEED)
	}
}
