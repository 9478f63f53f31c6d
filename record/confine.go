package record

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
)

// A capture is often someone else's: a directory shared for a bug report or
// fed to a CI job. Everything it names — the manifest's file list, its nsys
// export, the table files themselves, which may be symlinks — is untrusted.
// Every file the reader opens goes through openInCapture, which keeps the
// reader inside the directory and away from anything that is not a plain
// file (docs/record.md, "Reading a capture you did not record").

// ErrOutsideCapture is wrapped by a *PathError for a path that leads out of
// the capture directory: absolute, climbing with "..", or through a symlink
// whose target is outside.
var ErrOutsideCapture = errors.New("leads outside the capture directory")

// ErrNotRegular is wrapped by a *PathError for a path that names something
// other than a regular file (a FIFO, a device, a socket, a directory): its
// reads could block forever or never end, so it is not opened for reading.
var ErrNotRegular = errors.New("is not a regular file")

// PathError says which path of a capture was refused and why. It never
// carries anything read from the file.
type PathError struct {
	Path string // as the capture named it
	Err  error  // ErrOutsideCapture, ErrNotRegular, or the open error
}

func (e *PathError) Error() string { return fmt.Sprintf("%q %v", e.Path, e.Err) }
func (e *PathError) Unwrap() error { return e.Err }

// capturedFile is a regular file inside a capture, opened for reading, with
// reads bounded by its size at open (or less, see limitTo).
type capturedFile struct {
	f    *os.File
	size int64
	r    io.Reader
}

func (c *capturedFile) Read(p []byte) (int, error) { return c.r.Read(p) }
func (c *capturedFile) Close() error               { return c.f.Close() }

// limitTo bounds reads to n bytes when n is smaller than the file.
func (c *capturedFile) limitTo(n int64) {
	if n >= 0 && n < c.size {
		c.r = io.LimitReader(c.f, n)
	}
}

// openInCapture opens rel, a slash-separated path the capture named, for
// reading inside dir. It refuses a path that is not local (absolute, "..",
// empty), one that resolves through a symlink to outside dir (os.Root does
// the resolution, component by component, with openat), and anything but a
// regular file — checked before opening, so a device is never opened, and
// again on the open descriptor, so a file swapped in between is caught
// too. A FIFO is opened non-blocking, so even that check cannot hang.
func openInCapture(dir, rel string) (*capturedFile, error) {
	name := filepath.FromSlash(rel)
	if !filepath.IsLocal(name) {
		return nil, &PathError{rel, ErrOutsideCapture}
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		return nil, err
	}
	defer root.Close()
	st, err := root.Stat(name)
	if err != nil {
		return nil, classifyOpenErr(rel, err)
	}
	if !st.Mode().IsRegular() {
		return nil, &PathError{rel, ErrNotRegular}
	}
	f, err := root.OpenFile(name, os.O_RDONLY|syscall.O_NONBLOCK|syscall.O_NOCTTY, 0)
	if err != nil {
		return nil, classifyOpenErr(rel, err)
	}
	st, err = f.Stat()
	if err != nil {
		f.Close()
		return nil, &PathError{rel, err}
	}
	if !st.Mode().IsRegular() {
		f.Close()
		return nil, &PathError{rel, ErrNotRegular}
	}
	return &capturedFile{f: f, size: st.Size(), r: io.LimitReader(f, st.Size())}, nil
}

// classifyOpenErr names an os.Root failure. os.Root reports an escape as a
// *fs.PathError whose error reads "path escapes from parent" (an unexported
// value); TestOpenInCapture pins that, so a change in Go fails a test rather
// than silently downgrading the error.
func classifyOpenErr(rel string, err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) && strings.Contains(pe.Err.Error(), "escapes from parent") {
		return &PathError{rel, ErrOutsideCapture}
	}
	if errors.As(err, &pe) {
		return &PathError{rel, pe.Err}
	}
	return &PathError{rel, err}
}

// resolveInCapture returns a path to rel for a reader that must open it by
// name (the SQLite library behind the nsys decoder): rel is first checked as
// openInCapture checks it, then resolved with every symlink followed, and
// the result must still lie inside dir's own resolved path. The file could
// still be replaced between this check and the open by whoever can write
// the capture directory while it is read; a capture at rest cannot do that.
func resolveInCapture(dir, rel string) (string, error) {
	f, err := openInCapture(dir, rel)
	if err != nil {
		return "", err
	}
	f.Close()
	realDir, err := filepath.EvalSymlinks(dir)
	if err != nil {
		return "", err
	}
	real, err := filepath.EvalSymlinks(filepath.Join(dir, filepath.FromSlash(rel)))
	if err != nil {
		return "", &PathError{rel, err}
	}
	if inside, err := filepath.Rel(realDir, real); err != nil || !filepath.IsLocal(inside) {
		return "", &PathError{rel, ErrOutsideCapture}
	}
	return real, nil
}

// isUnsafePath reports whether err is a refusal to leave the capture or to
// open something that is not a regular file.
func isUnsafePath(err error) bool {
	return errors.Is(err, ErrOutsideCapture) || errors.Is(err, ErrNotRegular)
}
