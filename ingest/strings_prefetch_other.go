//go:build !amd64

package ingest

import "unsafe"

// prefetch is a hint that this architecture goes without
// (strings_prefetch_amd64.s has the one amd64 has).
func prefetch(unsafe.Pointer) {}
