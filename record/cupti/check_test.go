package cupti

import (
	"strings"
	"testing"

	"github.com/llmprof/llmprof/ingest"
	"github.com/llmprof/llmprof/record/cupti/cuptitest"
)

func TestCheckTrace(t *testing.T) {
	tr, _, err := decodeBytes(t, "a.lpcupti", everyKind().Bytes())
	if err != nil {
		t.Fatal(err)
	}
	c := CheckTrace(tr)
	if c.Files != 1 || c.Kernels != 2 || c.Joined != 2 || c.Memcpys != 2 || c.Memsets != 1 || c.Syncs != 1 ||
		c.RuntimeCalls != 1 || c.DriverCalls != 1 {
		t.Errorf("check %+v", c)
	}
	// everyKind has 12 dropped records: a problem.
	if len(c.Problems) != 1 || !strings.Contains(c.Problems[0], "dropped 12") {
		t.Errorf("problems %q", c.Problems)
	}

	// A process killed before its final flush, whose kernels have no
	// launching call.
	w := cuptitest.New(7, 24, 24)
	w.Clock(cuptitest.ClockStart, 10, 100, 200, 5)
	w.Str(1, "k")
	w.Kernel(cuptitest.Kernel{Start: 20, End: 30, Corr: 1, Name: 1})
	tr, _, err = decodeBytes(t, "b.lpcupti", w.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	c = CheckTrace(tr)
	if got := strings.Join(c.Problems, "\n"); !strings.Contains(got, "only 0 of 1 kernels joined") || !strings.Contains(got, "no final flush") {
		t.Errorf("problems %q", c.Problems)
	}
	if c := CheckTrace(ingest.New()); len(c.Problems) != 1 || !strings.Contains(c.Problems[0], "no CUPTI activity file") {
		t.Errorf("empty trace: problems %q", c.Problems)
	}
}
