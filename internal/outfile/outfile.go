// Package outfile is the one way llmprof writes an output file: the report
// of -o, the tables of --tokens and --requests, diff's --out FORMAT=PATH,
// export's --perfetto and --parquet files, stats -o and the files demo writes.
// It sits at the very end of the pipeline, after the renderers.
//
// A regular file (or a name that does not exist yet) is written whole under
// a temporary name in the same directory and renamed into place, so a failed
// run never leaves half a report and a reader never sees one. Everything
// else is not ours to replace: a character device (/dev/null, a terminal), a
// named pipe or a Unix socket is written in place, streamed; /dev/stdout,
// /dev/stderr and /dev/fd/N write to that descriptor of this process; a
// directory, a block device, or a symbolic link to anything but a regular
// file is an error that names the path. "-" is standard output.
package outfile

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/llmprof/llmprof/ingest"
)

// Options say how Create treats the path.
type Options struct {
	// Stdout is where "-" writes (nil: "-" is an error).
	Stdout io.Writer
	// InDir marks a file that a command places inside a directory it
	// writes (demo DIR, export --parquet DIR): a symbolic link already at
	// the path is replaced, never followed, so nothing is written outside
	// the directory; devices and pipes there are errors.
	InDir bool
	// PipeWait is how long a named pipe may lack a reader before Create
	// gives up (0: 10 s, as the input side waits for a writer).
	PipeWait time.Duration
}

// File is an output being written. Write to it, then Commit; Abort (safe to
// defer, a no-op after Commit) removes what a failed run wrote.
type File struct {
	path string
	bw   *bufio.Writer
	// out is the open file or connection; nil for Options.Stdout.
	out io.WriteCloser
	// tmp is the temporary name renamed onto final at Commit ("" when
	// the file is written in place).
	tmp, final string
	mode       fs.FileMode
	done       bool
}

// Write writes p, buffered.
func (f *File) Write(p []byte) (int, error) { return f.bw.Write(p) }

// Writer is the buffered writer behind f.
func (f *File) Writer() *bufio.Writer { return f.bw }

// Path is the path f was created for.
func (f *File) Path() string { return f.path }

// Commit flushes what was written and makes it visible: the temporary file
// is renamed into place with the mode of the file it replaces (0644 for a
// new one); a file written in place is closed.
func (f *File) Commit() error {
	if f.done {
		return fmt.Errorf("%s: output already committed or aborted", f.path)
	}
	f.done = true
	err := f.bw.Flush()
	if f.tmp != "" {
		tf := f.out.(*os.File)
		if err == nil {
			err = tf.Chmod(f.mode)
		}
		if cerr := tf.Close(); err == nil {
			err = cerr
		}
		if err == nil {
			err = os.Rename(f.tmp, f.final)
		}
		if err != nil {
			os.Remove(f.tmp)
			return f.wrap(err)
		}
		return nil
	}
	if f.out != nil {
		if cerr := f.out.Close(); err == nil {
			err = cerr
		}
	}
	return f.wrap(err)
}

// Abort gives up the output: a temporary file is removed, a file written in
// place is closed (what reached a pipe or device stays there).
func (f *File) Abort() {
	if f.done {
		return
	}
	f.done = true
	if f.out != nil {
		f.out.Close()
	}
	if f.tmp != "" {
		os.Remove(f.tmp)
	}
}

func (f *File) wrap(err error) error {
	if err == nil {
		return nil
	}
	var pe *fs.PathError
	if errors.As(err, &pe) || strings.Contains(err.Error(), f.path) {
		return err
	}
	return fmt.Errorf("%s: %w", f.path, err)
}

// Write creates path, runs write on it and commits it; when write fails
// nothing is left behind.
func Write(path string, opts Options, write func(*bufio.Writer) error) error {
	f, err := Create(path, opts)
	if err != nil {
		return err
	}
	defer f.Abort()
	if err := write(f.bw); err != nil {
		return err
	}
	return f.Commit()
}

const bufSize = 1 << 20

// Create opens path for writing according to what is there now (see the
// package doc).
func Create(path string, opts Options) (*File, error) {
	if path == "" {
		return nil, errors.New("no output path")
	}
	if path == "-" {
		if opts.Stdout == nil {
			return nil, errors.New(`"-" (standard output) is not allowed here`)
		}
		return &File{path: path, bw: bufio.NewWriterSize(opts.Stdout, bufSize)}, nil
	}
	if fd, ok := descriptor(path); ok && !opts.InDir {
		return openDescriptor(path, fd)
	}
	fi, err := os.Lstat(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return createTemp(path, path, 0o644)
	case err != nil:
		return nil, err
	}
	if fi.Mode()&fs.ModeSymlink != 0 {
		if opts.InDir {
			// Replaced by the rename, never followed out of the directory.
			return createTemp(path, path, 0o644)
		}
		target, err := filepath.EvalSymlinks(path)
		if err != nil {
			return nil, fmt.Errorf("%s: a symbolic link whose target cannot be reached (%v); give the target's path, or remove the link", path, err)
		}
		tfi, err := os.Stat(target)
		if err != nil {
			return nil, fmt.Errorf("%s: a symbolic link to %s: %w", path, target, err)
		}
		if tfi.Mode().IsRegular() {
			// Write the target through its own temporary file: the link stays a link.
			return createTemp(path, target, tfi.Mode().Perm())
		}
		if special(tfi.Mode()) {
			return openInPlace(path, tfi.Mode(), opts)
		}
		return nil, fmt.Errorf("%s: a symbolic link to %s, which is %s, not a file", path, target, describe(tfi.Mode()))
	}
	if fi.Mode().IsRegular() {
		return createTemp(path, path, fi.Mode().Perm())
	}
	if special(fi.Mode()) && !opts.InDir {
		return openInPlace(path, fi.Mode(), opts)
	}
	return nil, fmt.Errorf("%s is %s, not a file: give a file name", path, describe(fi.Mode()))
}

// special reports the kinds written in place: character devices, named
// pipes, sockets.
func special(m fs.FileMode) bool {
	if m&fs.ModeDevice != 0 {
		return m&fs.ModeCharDevice != 0
	}
	return m&(fs.ModeNamedPipe|fs.ModeSocket) != 0
}

func describe(m fs.FileMode) string { return "a " + ingest.FileKind(m) }

// createTemp starts an atomic write of final, the name the user gave being
// path. The temporary file is created with O_EXCL under a random name in
// final's directory (os.CreateTemp), so nothing planted there is followed.
func createTemp(path, final string, mode fs.FileMode) (*File, error) {
	dir := filepath.Dir(final)
	tf, err := os.CreateTemp(dir, "."+filepath.Base(final)+".llmprof-*")
	if err != nil {
		if _, serr := os.Stat(dir); errors.Is(serr, fs.ErrNotExist) {
			return nil, fmt.Errorf("cannot write %s: directory %s does not exist", path, dir)
		}
		return nil, fmt.Errorf("cannot write %s: %w", path, unwrapPath(err))
	}
	return &File{path: path, out: tf, bw: bufio.NewWriterSize(tf, bufSize), tmp: tf.Name(), final: final, mode: mode}, nil
}

func unwrapPath(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// openInPlace opens a device, named pipe or socket for writing, without
// creating or truncating anything.
func openInPlace(path string, m fs.FileMode, opts Options) (*File, error) {
	var out io.WriteCloser
	switch {
	case m&fs.ModeSocket != 0:
		c, err := net.Dial("unix", path)
		if err != nil {
			return nil, fmt.Errorf("%s: a socket nothing accepts on: %w", path, err)
		}
		out = c
	case m&fs.ModeNamedPipe != 0:
		f, err := openPipe(path, opts.PipeWait)
		if err != nil {
			return nil, err
		}
		out = f
	default:
		f, err := os.OpenFile(path, os.O_WRONLY, 0)
		if err != nil {
			return nil, err
		}
		out = f
	}
	return &File{path: path, out: out, bw: bufio.NewWriterSize(out, bufSize)}, nil
}

// descriptor recognises the names of this process's open descriptors:
// /dev/stdout, /dev/stderr, /dev/fd/N and /proc/self/fd/N. Opening them
// anew would truncate or lose the append mode a shell gave them (`>>`), and
// renaming over them would replace the link; writing to the descriptor is
// what the name means.
func descriptor(path string) (int, bool) {
	switch p := filepath.Clean(path); p {
	case "/dev/stdout":
		return 1, true
	case "/dev/stderr":
		return 2, true
	default:
		for _, prefix := range []string{"/dev/fd/", "/proc/self/fd/"} {
			if rest, ok := strings.CutPrefix(p, prefix); ok {
				if n, err := strconv.Atoi(rest); err == nil && n >= 0 {
					return n, true
				}
			}
		}
	}
	return 0, false
}
