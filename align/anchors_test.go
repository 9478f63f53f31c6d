package align

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/llmprof/llmprof/ingest"
)

// TestAlignClockPairs: a capture's monotonic clock with bracketed clock pairs
// every 10 s (widths 0.2–5 µs, 5% slow reads of 1 ms) is fitted to within the
// bracket widths, and the bound holds at every sample.
func TestAlignClockPairs(t *testing.T) {
	for seed := range uint64(5) {
		t.Run(fmt.Sprintf("seed%d", seed), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(seed, 3))
			boot := int64(5_000_000_000_000)
			off := t0 - boot + rng.Int64N(1e9)
			drift := (rng.Float64()*2 - 1) * 50 // MONOTONIC_RAW vs slewed REALTIME
			truth := func(x int64) int64 { return x + off + int64(math.Round(drift*1e-6*float64(x-boot))) }
			tr := ingest.New()
			var anchors []ingest.ClockAnchor
			for i := range int64(13) {
				x := boot + i*10e9
				w := 200 + rng.Int64N(4800)
				if rng.Float64() < 0.05 {
					w = 1_000_000
				}
				lo := truth(x) - rng.Int64N(w+1)
				anchors = append(anchors, ingest.ClockAnchor{Kind: ingest.AnchorClockPair, Local: x, RefLow: lo, RefHigh: lo + w})
			}
			tr.Sources = []ingest.Source{
				{Path: "cap/otlp", Clock: ingest.ClockDomain{Name: "realtime@a", Kind: ingest.ClockRealtime}},
				{Path: "cap/nvml", Clock: ingest.ClockDomain{Name: "monotonic@a", Kind: ingest.ClockMonotonic}, Anchors: anchors},
			}
			tr.Spans = []ingest.Span{{Name: tr.Strings.Intern("llm.request"), Start: truth(boot), End: truth(boot + 120e9), Origin: ingest.OriginOTLP, Resource: -1, Scope: -1}}
			var local []int64
			for i := range int64(120) {
				x := boot + i*1e9 + rng.Int64N(1e9)
				local = append(local, x)
				tr.Samples = append(tr.Samples, ingest.Sample{Time: x, Value: float64(i), Metric: tr.Strings.Intern("gpu.util"), Source: 1, Instance: -1})
			}
			res := mustAlign(t, tr, DefaultOptions())
			f := res.FitFor(1)
			if f.Status != StatusRefined || f.Anchors.ClockPair != 13 {
				t.Fatalf("status %s anchors %v; warnings %q", f.Status, f.Anchors, f.Warnings)
			}
			if err := f.OffsetNs - (truth(f.CenterNs) - f.CenterNs); abs64(err) > 5_000 {
				t.Errorf("offset error %d ns, want within the bracket widths (≤ 5 µs)", err)
			}
			if math.Abs(f.DriftPPM-drift) > 0.1 {
				t.Errorf("drift %.4f ppm, truth %.4f", f.DriftPPM, drift)
			}
			if f.BoundNs == nil {
				t.Fatalf("no bound from two-sided brackets")
			}
			for _, x := range local {
				lo, hi, ok := f.Interval(x)
				if !ok || truth(x) < lo || truth(x) > hi {
					t.Fatalf("truth %d outside [%d, %d] (ok=%v)", truth(x), lo, hi, ok)
				}
			}
			// Samples were rewritten onto the reference clock.
			for i, s := range tr.Samples {
				if d := s.Time - truth(local[i]); abs64(d) > *f.BoundNs {
					t.Fatalf("sample %d is %d ns off the truth, bound %d", i, d, *f.BoundNs)
				}
			}
		})
	}
}

// TestAlignRPC: a server span on host B lies inside the client span on host
// A that called it; those containments bound host B's clock on both sides.
func TestAlignRPC(t *testing.T) {
	rng := rand.New(rand.NewPCG(4, 4))
	const off = int64(-3_200_000) // host B's clock runs 3.2 ms ahead
	tr := ingest.New()
	tr.Sources = []ingest.Source{
		{Path: "gateway.jsonl", Clock: ingest.ClockDomain{Name: "realtime@a", Kind: ingest.ClockRealtime}},
		{Path: "engine.jsonl", Clock: ingest.ClockDomain{Name: "realtime@b", Kind: ingest.ClockRealtime}},
	}
	name := tr.Strings.Intern("POST /v1/completions")
	var serverLocal []int64
	for i := range 100 {
		start := t0 + int64(i)*200_000_000 + rng.Int64N(50_000_000)
		end := start + 10_000_000 + rng.Int64N(90_000_000)
		trace := ingest.TraceID{byte(i), 1}
		client := ingest.SpanID{byte(i), 0xc}
		// The server receives 50–300 µs after the client sends and replies
		// as much before the client receives.
		ss := start + 50_000 + rng.Int64N(250_000)
		se := end - 50_000 - rng.Int64N(250_000)
		tr.Spans = append(tr.Spans,
			ingest.Span{TraceID: trace, ID: client, Name: name, Start: start, End: end, Kind: ingest.SpanKindClient, Origin: ingest.OriginOTLP, Resource: -1, Scope: -1},
			ingest.Span{TraceID: trace, ID: ingest.SpanID{byte(i), 0x5}, Parent: client, Name: name, Start: ss - off, End: se - off, Kind: ingest.SpanKindServer, Origin: ingest.OriginOTLP, Source: 1, Resource: -1, Scope: -1},
		)
		serverLocal = append(serverLocal, ss-off)
	}
	res := mustAlign(t, tr, DefaultOptions())
	f := res.FitFor(1)
	if f.Status != StatusRefined || f.Anchors.Causal != 100 {
		t.Fatalf("status %s anchors %v; warnings %q", f.Status, f.Anchors, f.Warnings)
	}
	if f.BoundNs == nil {
		t.Fatalf("no bound from two-sided containment; warnings %q", f.Warnings)
	}
	for _, x := range serverLocal {
		lo, hi, ok := f.Interval(x)
		if !ok || x+off < lo || x+off > hi {
			t.Fatalf("truth %d outside [%d, %d]", x+off, lo, hi)
		}
	}
	if err := f.OffsetNs - off; abs64(err) > *f.BoundNs {
		t.Errorf("offset error %d ns beyond the bound %d", err, *f.BoundNs)
	}
}

// TestAlignSequence: NVTX ranges and OTLP spans that share a name and a count
// are paired in order when nothing better exists.
func TestAlignSequence(t *testing.T) {
	tr, truth := buildSynth(synthSpec{seed: 21, pairs: 60, offsetNs: 42_000_000, driftPPM: -5, jitterNs: 20_000, durationNs: 30e9, noMirror: true})
	// Name the OTLP spans like the NVTX ranges ("forward").
	fwd := tr.Strings.Intern("forward")
	for i := range tr.Spans {
		if tr.Spans[i].Origin == ingest.OriginOTLP {
			tr.Spans[i].Name = fwd
		}
	}
	res := mustAlign(t, tr, DefaultOptions())
	f := fitNamed(t, res, "nsys:report")
	if f.Status != StatusRefined || f.Anchors.Sequence != 60 || f.Anchors.Matched != 0 {
		t.Fatalf("status %s anchors %v; warnings %q", f.Status, f.Anchors, f.Warnings)
	}
	if err := f.OffsetNs - truth.trueOffset(f.CenterNs); abs64(err) > 30_000 {
		t.Errorf("offset error %d ns", err)
	}
	if f.BoundNs != nil {
		t.Errorf("a same-name pairing is soft; it cannot give a guaranteed bound (got %d)", *f.BoundNs)
	}

	// One range fewer: the counts differ, the pairing is not attempted.
	tr2, _ := buildSynth(synthSpec{seed: 21, pairs: 60, offsetNs: 42_000_000, jitterNs: 20_000, durationNs: 30e9, noMirror: true})
	dropped := false
	for i := range tr2.Spans {
		if tr2.Spans[i].Origin == ingest.OriginOTLP {
			if !dropped {
				tr2.Spans[i].Name = tr2.Strings.Intern("other")
				dropped = true
				continue
			}
			tr2.Spans[i].Name = tr2.Strings.Intern("forward")
		}
	}
	f2 := fitNamed(t, mustAlign(t, tr2, DefaultOptions()), "nsys:report")
	if f2.Status != StatusUnrefined || f2.Anchors.Sequence != 0 {
		t.Errorf("unequal counts: status %s anchors %v, want unrefined with no sequence anchors", f2.Status, f2.Anchors)
	}
}

// TestAlignRequestAndStepKeys: NVTX text with request_id= and step= finds the
// OTLP span with that llm.request.id or llm.step.id, preferring the request
// or step span when stage spans repeat the ID, and skipping IDs that stay
// ambiguous.
func TestAlignRequestAndStepKeys(t *testing.T) {
	tr, truth := buildSynth(synthSpec{seed: 31, pairs: 100, offsetNs: -8e9, driftPPM: 20, jitterNs: 50_000, durationNs: 60e9})
	reqKey := tr.Strings.Intern("llm.request.id")
	reqSpan := tr.Strings.Intern("llm.request")
	stage := tr.Strings.Intern("llm.decode")
	var extra []ingest.Span
	n := 0
	for i := range tr.Spans {
		s := &tr.Spans[i]
		switch s.Origin {
		case ingest.OriginOTLP:
			id := fmt.Sprintf("cmpl-%d", n)
			n++
			switch {
			case n%3 == 0: // keyed by request ID, with a stage span repeating it
				s.Name = reqSpan
				s.Attrs = tr.AddAttrs(append(slices.Clone(tr.SpanAttrs(s)), ingest.NewAttr(reqKey, ingest.StringValue(tr.Strings.Intern(id))))...)
				st := *s
				st.Name, st.ID = stage, ingest.SpanID{0xee, byte(n), byte(n >> 8)}
				st.Attrs = tr.AddAttrs(ingest.NewAttr(reqKey, ingest.StringValue(tr.Strings.Intern(id))))
				extra = append(extra, st)
			case n%3 == 1: // keyed by step ID (the builder sets llm.step.id = index)
			}
		}
	}
	tr.Spans = append(tr.Spans, extra...)
	// Rewrite the NVTX texts to use request and step keys by pair index.
	otlpByID := map[ingest.SpanID]*ingest.Span{}
	for i := range tr.Spans {
		if s := &tr.Spans[i]; s.Origin == ingest.OriginOTLP && s.Name != stage {
			otlpByID[s.ID] = s
		}
	}
	for i := range tr.Spans {
		s := &tr.Spans[i]
		if s.Origin != ingest.OriginNVTX {
			continue
		}
		o := otlpByID[ingest.ParseMirror(tr.Str(s.Name)).Span]
		if v, ok := tr.AttrString(tr.SpanAttrs(o), "llm.request.id"); ok {
			s.Name = tr.Strings.Intern("request_id=" + v)
		} else if v, ok := tr.Attr(tr.SpanAttrs(o), "llm.step.id"); ok && v.Int()%2 == 0 {
			s.Name = tr.Strings.Intern(fmt.Sprintf("step=%d", v.Int()))
		}
	}
	tr.Sort()
	res := mustAlign(t, tr, DefaultOptions())
	f := fitNamed(t, res, "nsys:report")
	if f.Status != StatusRefined || f.Anchors.Matched != 100 {
		t.Fatalf("status %s anchors %v; warnings %q", f.Status, f.Anchors, f.Warnings)
	}
	checkTruthInside(t, f, truth)

	// Two request spans with the same ID: ambiguous, not matched.
	al := &aligner{t: tr}
	c := []int32{0, 1}
	tr.Spans[0].Name, tr.Spans[1].Name = reqSpan, reqSpan
	if got := al.pickUnique(c, requestSpanNames); got != -2 {
		t.Errorf("pickUnique of two request spans = %d, want -2 (ambiguous)", got)
	}
	tr.Spans[1].Name = stage
	if got := al.pickUnique(c, requestSpanNames); got != 0 {
		t.Errorf("pickUnique prefers the request span: got %d, want 0", got)
	}
}

// TestAlignChain: GPU ops from a source without API calls are anchored to the
// launches in an nsys export that is itself anchored to the OTLP spans — one-
// sided bounds only, so the estimate hugs them and no bound is promised.
func TestAlignChain(t *testing.T) {
	tr, truth := buildSynth(synthSpec{seed: 41, pairs: 150, offsetNs: 1e9, driftPPM: 60, jitterNs: 50_000, durationNs: 90e9})
	// Move the kernels into a third source on its own clock, 12.5 ms behind
	// the nsys clock.
	const lag = int64(12_500_000)
	tr.Sources = append(tr.Sources, ingest.Source{Path: "cupti.bin", Clock: ingest.ClockDomain{Name: "cupti@a", Kind: ingest.ClockUnknown}})
	var kernelLocal []int64
	for i := range tr.GPUOps {
		o := &tr.GPUOps[i]
		o.Source = 2
		kernelLocal = append(kernelLocal, o.Start)
		o.Start, o.End = o.Start-lag, o.End-lag
	}
	res := mustAlign(t, tr, DefaultOptions())
	f := fitNamed(t, res, "cupti@a")
	if f.Status != StatusRefined || f.Anchors.Causal != 150 {
		t.Fatalf("status %s anchors %v; warnings %q", f.Status, f.Anchors, f.Warnings)
	}
	if f.BoundNs != nil {
		t.Errorf("launch→kernel bounds are one-sided; no bound can be guaranteed (got %d)", *f.BoundNs)
	}
	// The estimate hugs the lower envelope: kernels start at least 3 µs
	// after their launch, so the error is about that minimum delay.
	for i, o := range tr.GPUOps {
		want := truth.toRef(kernelLocal[i])
		if d := o.Start - want; abs64(d) > 20_000 {
			t.Fatalf("kernel %d: %d ns off the truth", i, d)
		}
	}
	if c := res.Causality; c.Checked != 150 || c.Violations != 0 {
		t.Errorf("causality %+v, want 150 checked, 0 violations", c)
	}
	if got := fitNamed(t, res, "nsys:report"); got.Status != StatusRefined {
		t.Errorf("nsys domain %s", got.Status)
	}
}

func TestAlignOptions(t *testing.T) {
	tr, _ := buildSynth(synthSpec{seed: 1, pairs: 20, jitterNs: 50_000, durationNs: 10e9})
	bad := DefaultOptions()
	bad.MaxDriftPPM = 0
	bad.MinSegmentAnchors = 1
	if _, err := Align(tr, bad); err == nil || !strings.Contains(err.Error(), "MaxDriftPPM") || !strings.Contains(err.Error(), "MinSegmentAnchors") {
		t.Errorf("invalid options: err = %v", err)
	}
	opts := DefaultOptions()
	opts.Reference = "realtime@nowhere"
	if _, err := Align(tr, opts); err == nil || !strings.Contains(err.Error(), "nsys:report") {
		t.Errorf("unknown reference: err = %v, want the list of domains", err)
	}
	// Choosing the nsys clock as the reference maps the OTLP spans onto it.
	opts.Reference = "nsys:report"
	res, err := Align(tr, opts)
	if err != nil {
		t.Fatal(err)
	}
	if res.Reference != "nsys:report" || res.Fits[0].Status != StatusReference || res.Fits[1].Status != StatusRefined {
		t.Errorf("reference override: %+v", res.Fits)
	}
}

// TestUncertainty is the table behind the report's "finer than alignment"
// flag.
func TestUncertainty(t *testing.T) {
	r := &Result{
		Fits: []Fit{
			{Domain: "ref", Status: StatusReference, BoundNs: ptr(int64(0))},
			{Domain: "nsys-bounded", Status: StatusRefined, BoundNs: ptr(int64(4_000)), ResidualP99Ns: ptr(int64(30_000))},
			{Domain: "nsys-statistical", Status: StatusRefined, ResidualP99Ns: ptr(int64(30_000))},
			{Domain: "nsys-unrefined", Status: StatusUnrefined},
			{Domain: "lost", Status: StatusCannotAlign},
		},
		bySource: []int{0, 1, 2, 3, 4, 1, -1},
	}
	cases := []struct {
		name      string
		d         int64
		srcs      []ingest.SourceID
		wantU     int64
		wantKnown bool
		wantFiner bool
	}{
		{"same source", 10, []ingest.SourceID{1, 1}, 0, true, false},
		{"same domain, two sources", 10, []ingest.SourceID{1, 5}, 0, true, false},
		{"reference only", 1, []ingest.SourceID{0}, 0, true, false},
		{"bounded, coarse duration", 5_000, []ingest.SourceID{0, 1}, 4_000, true, false},
		{"bounded, fine duration", 3_999, []ingest.SourceID{0, 1}, 4_000, true, true},
		{"negative duration uses its size", -3_999, []ingest.SourceID{0, 1}, 4_000, true, true},
		{"statistical figure", 20_000, []ingest.SourceID{0, 2}, 30_000, true, true},
		{"two non-reference domains add", 33_000, []ingest.SourceID{1, 2}, 34_000, true, true},
		{"unrefined: unknown, always flagged", 1 << 50, []ingest.SourceID{0, 3}, 0, false, true},
		{"cannot align: unknown", 1 << 50, []ingest.SourceID{0, 4}, 0, false, true},
		{"source without records", 1, []ingest.SourceID{0, 6}, 0, false, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			u, known := r.Uncertainty(tc.srcs...)
			if u != tc.wantU || known != tc.wantKnown {
				t.Errorf("Uncertainty = %d, %v; want %d, %v", u, known, tc.wantU, tc.wantKnown)
			}
			if got := r.FinerThanUncertainty(tc.d, tc.srcs...); got != tc.wantFiner {
				t.Errorf("FinerThanUncertainty(%d) = %v, want %v", tc.d, got, tc.wantFiner)
			}
		})
	}
}

// TestFindLaunchesSkipsSharedCorrelation: a GPU op whose (pid, correlation)
// two API calls share has no launch pair (which call launched it is
// ambiguous); the other ops keep theirs.
func TestFindLaunchesSkipsSharedCorrelation(t *testing.T) {
	tr, _ := buildSynth(synthSpec{seed: 41, pairs: 150, offsetNs: 1e9, driftPPM: 60, jitterNs: 50_000, durationNs: 90e9})
	tr.Sources = append(tr.Sources, ingest.Source{Path: "cupti.bin", Clock: ingest.ClockDomain{Name: "cupti@a", Kind: ingest.ClockUnknown}})
	for i := range tr.GPUOps {
		tr.GPUOps[i].Source = 2
	}
	al := &aligner{t: tr}
	al.groupDomains()
	if n := len(al.findLaunches()); n != 150 {
		t.Fatalf("%d launch pairs, want 150", n)
	}
	tr.APICalls = append(tr.APICalls, tr.APICalls[0])
	tr.Sort()
	if n := len(al.findLaunches()); n != 149 {
		t.Errorf("%d launch pairs with one correlation shared by two calls, want 149", n)
	}
}
