package causal

import (
	"encoding/json"
	"fmt"
	"testing"
	"unsafe"

	"github.com/llmprof/llmprof/internal/spill"
	"github.com/llmprof/llmprof/internal/spill/spilltest"
)

// The tenant regression's float columns and the exposures and latencies
// the pairs' shares read until judge are in spill files while spilling is
// on, off the heap the collector marks, and all of it is given back when
// Analyze returns: the result is the one made on the heap.
func TestRegressionScratchSpills(t *testing.T) {
	reqs, load, tm := prepared(defaultSim(1))
	o := Options{NoLagModel: true}
	run := func() string {
		res, err := Analyze(Input{Requests: reqs, Load: load, Mapping: tm}, o)
		if err != nil {
			t.Fatal(err)
		}
		b, err := json.Marshal(res)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	want := run()

	spilltest.Enable(t)
	// Tables of 8 KiB and more in files.
	spill.Budget(64 << 10)
	if got := run(); got != want {
		t.Errorf("spilled, the tenant result differs from the one made on the heap:\n%.300s\nwant\n%.300s", got, want)
	}
	d := o.withDefaults()
	byTenant := map[string]int{}
	for i := range reqs {
		byTenant[reqs[i].Tenant.String()]++
	}
	n, kept := 0, 0
	for name, c := range byTenant {
		n = max(n, c)
		kept += c * (len(sourcesOf(load, name)) + 1) * len(d.Metrics)
	}
	// The columns of the largest target and the table of every target's
	// exposures and latencies, both at once while it is fitted.
	if s, least := spill.Read(), int64(8*(n*(4+2*len(d.Controls))+kept)); s.Peak < least {
		t.Errorf("at most %d bytes in spill files at once, want at least %d (the columns of %d rows and the exposures)", s.Peak, least, n)
	}
	if s := spill.Read(); s.Mapped != 0 {
		t.Errorf("%d bytes still in spill files after Analyze, want none", s.Mapped)
	}
}

// Every part of the regression's tables starts 16 bytes aligned, as a
// slice allocated on its own does: gonum's sum adds the first element of
// a slice that is not on its own, so the same exposures at an odd offset
// gave a pair's mean exposure a different last digit (alignedFloats).
func TestScratchPartsAligned(t *testing.T) {
	aligned := func(what string, s []float64) {
		t.Helper()
		if p := uintptr(unsafe.Pointer(unsafe.SliceData(s))); p%16 != 0 {
			t.Errorf("%s starts at %#x, not 16 bytes aligned", what, p)
		}
	}
	for _, n := range []int{1001, 1002} {
		var sc regressScratch
		var rsc rowScratch
		sc.reserve(n, 8, 3, &rsc)
		for what, s := range map[string][]float64{"one": sc.one, "y": sc.y, "quiet": sc.quiet, "durations": sc.durations, "controls": sc.ctrl, "rows' controls": rsc.ctrl} {
			aligned(fmt.Sprintf("%d rows: %s", n, what), s)
		}
		sc.kept = newKeptTable(4 * n)
		for i, m := range []int{n, 3, n} {
			aligned(fmt.Sprintf("take %d of %d", i, m), sc.kept.take(m))
		}
		sc.free()
	}
}
