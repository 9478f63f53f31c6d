//go:build unix

package outfile

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"syscall"
	"time"
)

// openPipe opens a named pipe for writing once it has a reader. A plain
// open would block forever without one; O_NONBLOCK fails at once with ENXIO
// instead, so Create retries until wait has passed. The file stays
// non-blocking, which Go's poller handles: writes wait for the reader.
func openPipe(path string, wait time.Duration) (*os.File, error) {
	if wait <= 0 {
		wait = 10 * time.Second
	}
	deadline := time.Now().Add(wait)
	for {
		f, err := os.OpenFile(path, os.O_WRONLY|syscall.O_NONBLOCK, 0)
		if err == nil {
			return f, nil
		}
		if !errors.Is(err, syscall.ENXIO) {
			return nil, err
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("%s: a named pipe that no process read from within %s", path, wait)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// openDescriptor writes to a duplicate of descriptor fd (closing it leaves
// the process's own descriptor open).
func openDescriptor(path string, fd int) (*File, error) {
	nfd, err := syscall.Dup(fd)
	if err != nil {
		return nil, fmt.Errorf("%s: descriptor %d is not open: %w", path, fd, err)
	}
	syscall.CloseOnExec(nfd)
	f := os.NewFile(uintptr(nfd), path)
	return &File{path: path, out: f, bw: bufio.NewWriterSize(f, bufSize)}, nil
}
