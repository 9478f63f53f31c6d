//go:build !linux

package otlp

import "github.com/llmprof/llmprof/ingest"

// mappedFile is a mapped input file; only Linux maps one
// (mapfile_linux.go), other systems read every input as a stream.
type mappedFile struct{}

func mapInput(*ingest.Input) *mappedFile { return nil }

func (*mappedFile) frames() frames { return nil }

func (*mappedFile) close() {}

func (*mappedFile) guard(decode func() error) error { return decode() }
