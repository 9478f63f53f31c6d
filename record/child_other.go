//go:build !linux

package record

import "syscall"

// parentDeathSignal: only Linux has one; elsewhere a SIGKILLed recorder
// leaves its child running.
func parentDeathSignal(*syscall.SysProcAttr) {}
