// Package testgc runs a package's tests under a looser collector target
// (compare's and report's TestMain): their simulated runs and bootstraps
// allocate gigabytes over a live heap of under 100 MB, and at Go's default
// 100% the collections cost 7% of compare's test binary's CPU and about a
// fifth of report's (compare/main_test.go, report/main_test.go).
package testgc

import (
	"os"
	"runtime/debug"
	"testing"
)

// Percent is the GOGC the tests run under.
const Percent = 300

// Main runs m's tests with the collector's target at Percent unless $GOGC
// sets one, and exits with their status. A package that calls it must
// have no test that reads the heap or depends on when a collection runs.
func Main(m *testing.M) {
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(Percent)
	}
	os.Exit(m.Run())
}
