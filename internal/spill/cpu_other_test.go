//go:build !linux

package spill

func cpuTime() int64 { return 0 }
