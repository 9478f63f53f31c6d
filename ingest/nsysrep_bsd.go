//go:build unix && !linux

package ingest

import "syscall"

func setDeathSignal(*syscall.SysProcAttr) {}
