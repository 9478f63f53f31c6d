package align

import (
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/llmprof/llmprof/ingest"
)

// A synthetic run with known truth: OTLP spans on the reference clock (host
// realtime) and, in an nsys source on a second clock, an NVTX range mirroring
// each span (text "span_id=<hex>") plus a CUDA launch and its kernel inside
// each range. The second clock maps to the reference as
//
//	M(x) = x + offset + drift·(x − x0) (+ step for x ≥ stepAt)
//
// The NVTX range lies inside its span: each end is pulled in by U(0, jitter)
// on the reference clock (docs/statistics.md A.5: the soft-match bias), so the
// containment bounds hold and the truth must lie inside the guaranteed
// interval. With symmetric jitter the ends move by N(0, jitter/2) either way
// and the containment assumption is broken on purpose.

// t0 is the synthetic session start: 2023-11-14T22:13:20Z in Unix ns.
const t0 = int64(1_700_000_000_000_000_000)

type synthSpec struct {
	seed       uint64
	pairs      int     // matched NVTX/OTLP pairs
	offsetNs   int64   // true offset at x0
	driftPPM   float64 // true drift
	jitterNs   int64   // how far inside its span each NVTX end lies, at most
	durationNs int64   // length of the run
	symmetric  bool    // jitter of either sign: containment broken
	stepBefore int     // the clock steps just before this pair (0: no step)
	stepNs     int64
	noMirror   bool // NVTX text without span_id: no matched events
	noEpoch    bool // no session-start anchor (times stay session-relative)
	mismatch   float64
	// sessionRelative: the nsys local clock counts from 0 (no utcEpochNs
	// applied) instead of from t0.
	sessionRelative bool
	// shiftNs moves the whole nsys source in time (no-overlap tests).
	shiftNs int64
}

type synthTruth struct {
	x0     int64
	stepAt int64 // local instant of the step (0: none)
	spec   synthSpec
	// nvtxLocal holds each NVTX range's local [start, end].
	nvtxLocal [][2]int64
}

// toRef is the true reference time of local instant x.
func (tr *synthTruth) toRef(x int64) int64 {
	y := x + tr.spec.offsetNs + int64(math.Round(tr.spec.driftPPM*1e-6*float64(x-tr.x0)))
	if tr.stepAt != 0 && x >= tr.stepAt {
		y += tr.spec.stepNs
	}
	return y
}

// trueOffset is M(x) − x.
func (tr *synthTruth) trueOffset(x int64) int64 { return tr.toRef(x) - x }

func buildSynth(spec synthSpec) (*ingest.Trace, *synthTruth) {
	rng := rand.New(rand.NewPCG(spec.seed, 0x616c69676e))
	t := ingest.New()
	t.Sources = []ingest.Source{
		{Path: "otlp.jsonl", Format: "otlp-json-lines", Host: "host-a", Clock: ingest.ClockDomain{Name: "realtime@host-a", Kind: ingest.ClockRealtime}},
		{Path: "report.sqlite", Format: "nsys", Clock: ingest.ClockDomain{Name: "nsys:report", Kind: ingest.ClockNsysSession}},
	}
	x0 := t0 + spec.shiftNs
	if spec.sessionRelative {
		x0 = spec.shiftNs
	}
	if !spec.noEpoch {
		t.Sources[1].Anchors = []ingest.ClockAnchor{{Kind: ingest.AnchorEpoch, Local: x0, RefLow: x0, RefHigh: x0}}
	}
	tr := &synthTruth{x0: x0, spec: spec}
	// The truth is defined on the nsys local clock. When the nsys clock is
	// session-relative its offset to Unix time is huge; spec.offsetNs is
	// then added on top of t0.
	if spec.sessionRelative {
		tr.spec.offsetNs += t0
	}
	stepName := t.Strings.Intern("llm.step")
	cudaLaunch := t.Strings.Intern("cudaLaunchKernel")
	kernelName := t.Strings.Intern("ampere_sgemm_128x64_nn")
	gap := spec.durationNs / int64(spec.pairs)
	var ids []ingest.SpanID
	for range spec.pairs {
		var id ingest.SpanID
		for j := range id {
			id[j] = byte(rng.UintN(256))
		}
		id[0] |= 1 // never all zero
		ids = append(ids, id)
	}
	for i := range spec.pairs {
		// Local NVTX range: evenly spaced with a random phase, 1–20 ms long.
		xs := x0 + int64(i)*gap + rng.Int64N(gap/4+1)
		xe := xs + 1_000_000 + rng.Int64N(19_000_000)
		if spec.stepBefore > 0 && i == spec.stepBefore {
			// Step half way between the previous range's end and this start.
			prevEnd := tr.nvtxLocal[i-1][1]
			tr.stepAt = prevEnd + (xs-prevEnd)/2
		}
		tr.nvtxLocal = append(tr.nvtxLocal, [2]int64{xs, xe})
		ys, ye := tr.toRef(xs), tr.toRef(xe)
		var ds, de int64
		if spec.symmetric {
			ds = int64(rng.NormFloat64() * float64(spec.jitterNs) / 2)
			de = int64(rng.NormFloat64() * float64(spec.jitterNs) / 2)
		} else if spec.jitterNs > 0 {
			ds, de = rng.Int64N(spec.jitterNs+1), rng.Int64N(spec.jitterNs+1)
		}
		trace := ingest.TraceID{byte(i), byte(i >> 8), 0xaa}
		t.Spans = append(t.Spans, ingest.Span{
			TraceID: trace, ID: ids[i], Name: stepName, Start: ys - ds, End: ye + de,
			Resource: -1, Scope: -1, Source: 0, Origin: ingest.OriginOTLP, Kind: ingest.SpanKindInternal,
			Attrs: t.AddAttrs(ingest.NewAttr(t.Strings.Intern("llm.step.id"), ingest.IntValue(int64(i)))),
		})
		mirrorOf := ids[i]
		if spec.mismatch > 0 && rng.Float64() < spec.mismatch {
			// Cross-wired: the range names a span far away in the run.
			mirrorOf = ids[(i+spec.pairs/2)%spec.pairs]
		}
		text := fmt.Sprintf("step span_id=%s", mirrorOf)
		if spec.noMirror {
			text = "forward"
		}
		t.Spans = append(t.Spans, ingest.Span{
			Name: t.Strings.Intern(text), Start: xs, End: xe, Resource: -1, Scope: -1,
			Pid: 4242, Tid: 4242, Source: 1, Origin: ingest.OriginNVTX,
		})
		// A launch 10–60 µs into the range and its kernel after a 3 µs +
		// lognormal queueing delay, both on the nsys clock.
		corr := uint32(1000 + i)
		ls := xs + 10_000 + rng.Int64N(50_000)
		t.APICalls = append(t.APICalls, ingest.APICall{
			Name: cudaLaunch, Start: ls, End: ls + 5_000,
			Pid: 4242, Tid: 4242, Correlation: corr, Source: 1, Origin: ingest.OriginCUDARuntime,
		})
		ks := ls + 3_000 + int64(math.Exp(8+rng.NormFloat64()))
		t.GPUOps = append(t.GPUOps, ingest.GPUOp{
			Start: ks, End: ks + 200_000, Name: kernelName, Stream: 7, Correlation: corr,
			Pid: 4242, Device: 0, Source: 1, Kind: ingest.OpKernel,
		})
	}
	t.Sources[0].Spans = spec.pairs
	t.Sources[1].Spans, t.Sources[1].GPUOps = 2*spec.pairs, spec.pairs
	t.Sort()
	return t, tr
}

// nsysLocalStarts returns the local start of every NVTX range, in build
// order, before alignment rewrote them.
func (tr *synthTruth) nsysLocalStarts() []int64 {
	out := make([]int64, len(tr.nvtxLocal))
	for i, r := range tr.nvtxLocal {
		out[i] = r[0]
	}
	return out
}
