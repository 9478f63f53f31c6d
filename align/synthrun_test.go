package align

import (
	"strings"
	"testing"
	"time"

	"github.com/llmprof/llmprof/ingest"
	"github.com/llmprof/llmprof/synth"
)

// synthRunTrace merges the llm.step spans of a synth run (reference clock)
// with its GPU-side trace (second clock), as analyze would after decoding
// the demo's OTLP and nsys files.
func synthRunTrace(t *testing.T, clock synth.ClockError) (*ingest.Trace, *synth.Run) {
	t.Helper()
	cfg := synth.DefaultConfig(3, 15*time.Second)
	cfg.GPUClock = clock
	run, err := synth.Generate(cfg)
	if err != nil {
		t.Fatal(err)
	}
	otlp := ingest.New()
	otlp.Sources = []ingest.Source{{Path: "synth.jsonl", Clock: ingest.ClockDomain{Name: "realtime@synth", Kind: ingest.ClockRealtime}}}
	name := otlp.Strings.Intern("llm.step")
	for _, st := range run.Steps {
		otlp.Spans = append(otlp.Spans, ingest.Span{TraceID: st.TraceID, ID: st.SpanID, Name: name, Start: st.Start, End: st.End,
			Origin: ingest.OriginOTLP, Resource: -1, Scope: -1})
	}
	tr := ingest.Merge(otlp, run.GPUTrace())
	tr.Validate()
	return tr, run
}

// gpuToRef inverts synth's clock error (t_gpu = t_ref + offset + drift·(t_ref −
// start)).
func gpuToRef(run *synth.Run, x int64) int64 {
	c := run.Config.GPUClock
	eps := c.DriftPPM * 1e-6
	return run.Config.Start + int64(float64(x-c.OffsetNs-run.Config.Start)/(1+eps))
}

// TestAlignSynthRun aligns the lead's synthetic serving run: every step's
// NVTX range mirrors its llm.step span. Offset and drift are recovered, and
// after alignment no kernel starts before its launch.
func TestAlignSynthRun(t *testing.T) {
	cases := []struct {
		name      string
		clock     synth.ClockError
		wantBound bool
	}{
		// synth jitters NVTX ends inward (a range nests in its span), so
		// the containment bounds hold and close the feasible region.
		{"half-normal inward jitter 20us", synth.ClockError{OffsetNs: -4_250_000_000, DriftPPM: 120, JitterNs: 20_000}, true},
		{"no jitter", synth.ClockError{OffsetNs: 7_000_000_000, DriftPPM: -45}, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tr, run := synthRunTrace(t, tc.clock)
			res := mustAlign(t, tr, DefaultOptions())
			f := fitNamed(t, res, "nsys:synth")
			if f.Status != StatusRefined || f.Anchors.Matched != len(run.Steps) {
				t.Fatalf("status %s anchors %v (want %d matched); warnings %q", f.Status, f.Anchors, len(run.Steps), f.Warnings)
			}
			truthOff := gpuToRef(run, f.CenterNs) - f.CenterNs
			if err := f.OffsetNs - truthOff; abs64(err) > 20_000 {
				t.Errorf("offset error %d ns", err)
			}
			// synth's drift is of the GPU clock against the reference;
			// ours is the reverse: (1+b) = 1/(1+ε).
			wantDrift := (1/(1+tc.clock.DriftPPM*1e-6) - 1) * 1e6
			if d := f.DriftPPM - wantDrift; d > 2 || d < -2 {
				t.Errorf("drift %.3f ppm, want %.3f", f.DriftPPM, wantDrift)
			}
			if (f.BoundNs != nil) != tc.wantBound {
				t.Errorf("bound %v, want present=%v; warnings %q", f.BoundNs, tc.wantBound, f.Warnings)
			}
			if !tc.wantBound && !strings.Contains(strings.Join(f.Warnings, "\n"), "contradict") {
				t.Errorf("no warning explains the missing bound: %q", f.Warnings)
			}
			if c := res.Causality; c.Checked != len(run.Ops) || c.Violations != 0 {
				t.Errorf("causality %+v, want %d checked and 0 violations", c, len(run.Ops))
			}
			t.Logf("%d steps, %d ops: offset error %d ns, drift %.3f ppm (truth %.3f), bound %d ns, residual p99 %d ns",
				len(run.Steps), len(run.Ops), f.OffsetNs-truthOff, f.DriftPPM, wantDrift, derefOr(f.BoundNs, -1), derefOr(f.ResidualP99Ns, -1))
		})
	}
}
