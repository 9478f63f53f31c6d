//go:build !linux

package record

import "golang.org/x/sys/unix"

// Outside Linux there is no CLOCK_BOOTTIME; the monotonic clock stands in
// for both, and the capture's anchors still relate monotonic to realtime.
const (
	clockBoottime     = unix.CLOCK_MONOTONIC
	clockMonotonicRaw = unix.CLOCK_MONOTONIC
)
