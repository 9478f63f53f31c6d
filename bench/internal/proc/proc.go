// Package proc is what the bench tools read of their own process: CPU time
// and peak resident memory as the kernel counts them (getrusage), and a CPU
// profile of a stretch of their work.
package proc

import (
	"os"
	"runtime/pprof"
	"syscall"
)

// CPUSeconds is the process's CPU time so far, user and system, to the
// microsecond (0 where the system does not say).
func CPUSeconds() float64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return float64(ru.Utime.Nano()+ru.Stime.Nano()) / 1e9
}

// PeakRSS is the most resident memory the process has held, in bytes
// (getrusage's ru_maxrss, which Linux gives in KiB).
func PeakRSS() (int64, error) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0, err
	}
	return ru.Maxrss << 10, nil
}

// StartCPUProfile writes a CPU profile to path from now until stop is
// called; an empty path profiles nothing and stop does nothing.
func StartCPUProfile(path string) (stop func() error, err error) {
	if path == "" {
		return func() error { return nil }, nil
	}
	f, err := os.Create(path)
	if err != nil {
		return nil, err
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, err
	}
	return func() error {
		pprof.StopCPUProfile()
		return f.Close()
	}, nil
}
