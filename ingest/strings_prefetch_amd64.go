package ingest

import "unsafe"

// prefetch asks for the cache line at p (PREFETCHT0), and returns without
// waiting for it (strings_prefetch_amd64.s). A plain load would be waited
// for: the processor retires no instruction after it until it arrives.
//
//go:noescape
func prefetch(p unsafe.Pointer)
