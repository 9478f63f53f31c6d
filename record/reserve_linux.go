package record

import (
	"errors"
	"os"

	"golang.org/x/sys/unix"
)

// allocate gives f n bytes of disk: fallocate(2), or written bytes on a
// file system without it.
func allocate(f *os.File, n int64) error {
	err := unix.Fallocate(int(f.Fd()), 0, 0, n)
	if errors.Is(err, unix.EOPNOTSUPP) || errors.Is(err, unix.ENOSYS) {
		return fillIncompressible(f, n)
	}
	return err
}
