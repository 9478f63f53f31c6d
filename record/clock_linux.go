package record

import "golang.org/x/sys/unix"

const (
	clockBoottime     = unix.CLOCK_BOOTTIME
	clockMonotonicRaw = unix.CLOCK_MONOTONIC_RAW
)
