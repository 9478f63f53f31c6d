//go:build !unix

package outfile

import (
	"fmt"
	"os"
	"time"
)

// openPipe opens a named pipe for writing (no O_NONBLOCK probe here).
func openPipe(path string, _ time.Duration) (*os.File, error) {
	return os.OpenFile(path, os.O_WRONLY, 0)
}

func openDescriptor(path string, fd int) (*File, error) {
	return nil, fmt.Errorf("%s: writing to descriptor %d is not supported on this system", path, fd)
}
