package record

import (
	"math"
	"testing"
	"time"

	"github.com/llmprof/llmprof/causal"
	"github.com/llmprof/llmprof/ingest"
)

// A capture recorded with mocked NVML per-process samples yields a tenant's
// SM-utilization load in causal: record writes the series under
// ingest.MetricNVMLProcessSMUtil and causal reads that name, end to end
// through the capture files and the decoder.
func TestCaptureYieldsSMUtilLoad(t *testing.T) {
	srv := mockServer(2)
	rt := newRecordTest(t, "sh", "-c", "exit 0")
	rt.opts.newSampler = func(o NVMLOptions) (gpuSampler, error) { return newNVMLSampler(srv, o) }
	rt.opts.NVML.DeviceInterval = 10 * time.Millisecond
	rt.opts.NVML.DrainInterval = 20 * time.Millisecond
	res := rt.run(t)
	checkFinal(t, res, StatusComplete)
	tr := decodeCapture(t, res.Dir, &CaptureDecoder{})

	// The mocked driver reports pid 4242 at 55% and pid 777 at 3% on each
	// GPU, once, stamped mockTS µs.
	at := int64(mockTS) * 1000
	grid := causal.NewGrid(at-3e9, at+2e9, 1e9)
	tm := causal.NewTenantMap(map[uint32]string{mockChildPid: "engine", mockOtherPid: "other"})
	load, err := causal.SMUtilLoad(tr, "", tm, grid)
	if err != nil {
		t.Fatalf("SMUtilLoad on a recorded capture: %v", err)
	}
	if load.Kind != causal.LoadSMUtil {
		t.Fatalf("load kind %v", load.Kind)
	}
	// Each sample covers the second before it (one sample per process and
	// GPU: the default period), summed over the process's GPUs.
	want := map[string]float64{"engine": 0, "other": 0}
	n := 0
	id, _ := tr.Strings.Lookup(ingest.MetricNVMLProcessSMUtil)
	for _, s := range tr.Samples {
		if s.Metric != id {
			continue
		}
		n++
		want[tm.ByPid[s.Pid]] += s.Value / 100
	}
	if n != 4 || math.Abs(want["engine"]-1.1) > 1e-9 {
		t.Fatalf("the capture holds %d per-process SM samples (want 4, 2 per GPU), engine sums to %g (want 1.1)", n, want["engine"])
	}
	bin := grid.Bin(at - 1)
	for tenant, w := range want {
		got := load.Series(tenant)
		if got == nil || math.Abs(got[bin]-w) > 1e-9 {
			t.Errorf("%s's SM utilization in the second before the sample: %v, want %g", tenant, got, w)
		}
		total := 0.0
		for _, v := range got {
			total += v
		}
		if math.Abs(total-w) > 1e-9 {
			t.Errorf("%s's load outside that second: total %g, want %g", tenant, total, w)
		}
	}
}
