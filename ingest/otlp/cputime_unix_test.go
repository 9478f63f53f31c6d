//go:build unix

package otlp_test

import (
	"syscall"
	"time"
)

// cpuTime is the CPU time (user and system) this process has used; on a
// shared machine it measures the work of a benchmark more steadily than the
// wall clock.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
