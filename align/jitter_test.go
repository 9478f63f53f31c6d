package align

import (
	"strings"
	"testing"
	"time"

	"github.com/llmprof/llmprof/ingest"
	"github.com/llmprof/llmprof/internal/synthtrace"
	"github.com/llmprof/llmprof/synth"
)

// jitteredRun is a simulated run whose OTLP span times carry up to jitterNs
// of jitter either way (as real exporters' do), decoded through the OTLP
// decoder and merged with its nsys side on a clock off by a second and
// 120 ppm.
func jitteredRun(t *testing.T, seed, jitterNs int64) (*ingest.Trace, *synth.Run) {
	t.Helper()
	cfg := synth.DefaultConfig(seed, 8*time.Second)
	cfg.GPUClock = synth.ClockError{OffsetNs: -1_250_000_000, DriftPPM: 120}
	cfg.OTLPJitterNs = jitterNs
	run, err := synth.Generate(cfg)
	if err != nil {
		t.Fatal(err)
	}
	tr := ingest.Merge(synthtrace.Decode(t, run, synth.StyleLLM, synth.ProtoFramed, "trace.pbf"), run.GPUTrace())
	tr.Validate()
	return tr, run
}

// With 0–2 µs of timestamp jitter the NVTX ranges stick out of the spans they
// mirror by up to 2 µs: within the stated timestamp slack, a guaranteed
// bound exists, and it holds for every GPU op.
func TestBoundHoldsOnJitteredTimestamps(t *testing.T) {
	for _, seed := range []int64{1, 2, 3} {
		tr, run := jitteredRun(t, seed, 2_000)
		truth := map[uint32]int64{}
		for _, op := range run.Ops {
			truth[op.Correlation] = op.Start
		}
		res := mustAlign(t, tr, DefaultOptions())
		f := fitNamed(t, res, "nsys:synth")
		if f.BoundNs == nil || f.SlackNs != DefaultOptions().TimestampSlackNs {
			t.Fatalf("seed %d: bound %v slack %d; warnings %q", seed, f.BoundNs, f.SlackNs, f.Warnings)
		}
		bound := *f.BoundNs
		truthOff := gpuToRef(run, f.CenterNs) - f.CenterNs
		if err := f.OffsetNs - truthOff; abs64(err) > bound {
			t.Errorf("seed %d: offset error %d ns outside the bound %d ns", seed, err, bound)
		}
		worst := int64(0)
		for i := range tr.GPUOps {
			o := &tr.GPUOps[i]
			want, ok := truth[o.Correlation]
			if !ok {
				t.Fatalf("op with correlation %d not in the run", o.Correlation)
			}
			worst = max(worst, abs64(o.Start-want))
		}
		if worst > bound {
			t.Errorf("seed %d: an aligned op is %d ns from its true time, beyond the bound %d ns", seed, worst, bound)
		}
		t.Logf("seed %d: bound %d ns, worst op error %d ns", seed, bound, worst)
	}
}

// Without the slack the same input shows why it is needed: the bounds
// contradict each other and no bound is given.
func TestJitterContradictsWithoutSlack(t *testing.T) {
	tr, _ := jitteredRun(t, 1, 2_000)
	opts := DefaultOptions()
	opts.TimestampSlackNs = 0
	f := fitNamed(t, mustAlign(t, tr, opts), "nsys:synth")
	if f.BoundNs != nil || !strings.Contains(strings.Join(f.Warnings, "\n"), "contradict each other") {
		t.Errorf("bound %v, warnings %q; want the contradiction", f.BoundNs, f.Warnings)
	}
}
