//go:build !linux

package spill

import (
	"errors"
	"os"
)

type mapping struct{ mem []byte }

func tempDir() string { return os.TempDir() }

func usable(string) error {
	return errors.New("spilling to a mapped file is built for Linux only; tables stay on the heap")
}

func mapFile(string, int64) (mapping, error) { return mapping{}, errors.ErrUnsupported }

func (m mapping) reserve(int64) error          { return errors.ErrUnsupported }
func (m mapping) remap(int64) (mapping, error) { return m, errors.ErrUnsupported }
func (m mapping) drop(off, n int64)            {}
func (m mapping) unmap()                       {}

func dropRange([]byte)    {}
func readResident() int64 { return 0 }

var pageSize = os.Getpagesize()

type resident struct{}

func newResident() *resident  { return &resident{} }
func (*resident) read() int64 { return 0 }
func (*resident) close()      {}

type program struct{}

func programPages() program { return program{} }
func (program) drop()       {}
