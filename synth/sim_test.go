package synth

import (
	"bytes"
	"math"
	"slices"
	"testing"
	"time"
)

func smallRun(t testing.TB, seed int64) *Run {
	t.Helper()
	r, err := Generate(DefaultConfig(seed, 20*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func TestGenerateInvariants(t *testing.T) {
	r := smallRun(t, 1)
	if len(r.Requests) < 100 {
		t.Fatalf("only %d requests in 20 s of three tenants", len(r.Requests))
	}
	preempted := 0
	for i := range r.Requests {
		q := &r.Requests[i]
		if len(q.Tokens) != q.OutputTokens {
			t.Fatalf("%s: %d tokens emitted, %d wanted", q.ID, len(q.Tokens), q.OutputTokens)
		}
		if len(q.Steps) != len(q.Tokens) {
			t.Fatalf("%s: %d steps for %d tokens", q.ID, len(q.Steps), len(q.Tokens))
		}
		stages := q.Tokenize() + q.Queue() + q.Prefill() + q.Decode() + q.Detokenize() + q.Stream()
		if stages != q.E2E() {
			t.Fatalf("%s: stages sum to %d, E2E is %d", q.ID, stages, q.E2E())
		}
		for _, d := range []int64{q.Tokenize(), q.Queue(), q.Prefill(), q.Decode(), q.Detokenize(), q.Stream()} {
			if d < 0 {
				t.Fatalf("%s: negative stage %d", q.ID, d)
			}
		}
		for k, tt := range r.TokenTruths(q) {
			if tt.Sum() != tt.To-tt.From {
				t.Fatalf("%s token %d: buckets sum to %d, interval is %d (%+v)", q.ID, k, tt.Sum(), tt.To-tt.From, tt)
			}
			if tt.Other < 0 || tt.GPUIdle < 0 || tt.CPUSchedule <= 0 || tt.CPUPostprocess <= 0 {
				t.Fatalf("%s token %d: impossible bucket %+v", q.ID, k, tt)
			}
		}
		if len(q.Preemptions) > 0 {
			preempted++
		}
	}
	// Ops of a step are sequential and launched before they run.
	for i := range r.Ops {
		op := &r.Ops[i]
		if op.Start < op.LaunchEnd || op.End <= op.Start {
			t.Fatalf("op %d violates causality: %+v", i, op)
		}
		if i > 0 && r.Ops[i-1].Step == op.Step && op.Start < r.Ops[i-1].End {
			t.Fatalf("op %d overlaps its predecessor", i)
		}
	}
	t.Logf("%d requests, %d steps, %d ops, %d requests preempted", len(r.Requests), len(r.Steps), len(r.Ops), preempted)
}

func TestPreemptionUnderKVPressure(t *testing.T) {
	cfg := DefaultConfig(3, 20*time.Second)
	cfg.Models[0].KVTokens = 9_000
	r, err := Generate(cfg)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for i := range r.Requests {
		q := &r.Requests[i]
		for _, p := range q.Preemptions {
			n++
			if p.To <= p.From {
				t.Fatalf("%s: empty preemption %+v", q.ID, p)
			}
		}
	}
	if n == 0 {
		t.Fatal("a 9k-token KV cache under this load must preempt")
	}
}

func TestDeterministic(t *testing.T) {
	var a, b bytes.Buffer
	if err := smallRun(t, 7).WriteOTLP(&a, StyleLLM, JSONLines); err != nil {
		t.Fatal(err)
	}
	if err := smallRun(t, 7).WriteOTLP(&b, StyleLLM, JSONLines); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(a.Bytes(), b.Bytes()) {
		t.Fatal("same seed, different output")
	}
	var c bytes.Buffer
	if err := smallRun(t, 8).WriteOTLP(&c, StyleLLM, JSONLines); err != nil {
		t.Fatal(err)
	}
	if bytes.Equal(a.Bytes(), c.Bytes()) {
		t.Fatal("different seeds, same output")
	}
}

func TestGPUTraceClock(t *testing.T) {
	cfg := DefaultConfig(2, 5*time.Second)
	cfg.GPUClock = ClockError{OffsetNs: 2_500_000_000, DriftPPM: 50}
	r, err := Generate(cfg)
	if err != nil {
		t.Fatal(err)
	}
	g := r.GPUTrace()
	if len(g.GPUOps) != len(r.Ops) {
		t.Fatalf("%d GPU ops, run has %d", len(g.GPUOps), len(r.Ops))
	}
	// The first op of the run, on the GPU clock.
	want := r.Ops[0].Start + cfg.GPUClock.OffsetNs + int64(50e-6*float64(r.Ops[0].Start-cfg.Start)+0.5)
	found := false
	for _, op := range g.GPUOps {
		if op.Correlation == r.Ops[0].Correlation && op.Start == want {
			found = true
		}
	}
	if !found {
		t.Fatalf("first op not found at %d on the GPU clock", want)
	}
}

// The interference record is the model's: every op of B's engine lasts its
// base duration times (1 + 0.35 × the share of its interval A's engine had
// kernels on the GPU), base being its duration less Op.Interference; no
// other engine's op is stretched; and InterferenceCost sums a request's
// steps' records at its first token.
func TestInterferenceRecord(t *testing.T) {
	const s = 0.35
	cfg := MultiTenantGPUConfig(4, 10*time.Second, s)
	r, err := Generate(cfg)
	if err != nil {
		t.Fatal(err)
	}
	engine := map[string]int{}
	for i, e := range r.Engines {
		engine[e.Model] = i
	}
	a, b := engine["engine-a"], engine["engine-b"]
	busyA := r.kernelUnion(a)
	stretched, worst := 0, 0.0
	for i := range r.Ops {
		op := &r.Ops[i]
		e := r.Steps[op.Step].Engine
		if e != b {
			if op.Interference != 0 {
				t.Fatalf("op %d of engine %d, which nothing slows, has interference %d", i, e, op.Interference)
			}
			continue
		}
		d := op.End - op.Start
		base := d - op.Interference
		if op.Interference < 0 || base <= 0 {
			t.Fatalf("op %d: duration %d, interference %d", i, d, op.Interference)
		}
		x := float64(covered(busyA, op.Start, op.End)) / float64(d)
		if op.Interference > 0 {
			stretched++
		}
		// The duration is the rounded fixed point of the equation.
		if dev := math.Abs(float64(d) - float64(base)*(1+s*x)); dev > 1 {
			worst = math.Max(worst, dev/float64(d))
			if dev > 1e-3*float64(d) {
				t.Fatalf("op %d: lasts %d ns, base %d × (1 + %.2f × overlap %.4f) = %.0f", i, d, base, s, x, float64(base)*(1+s*x))
			}
		}
	}
	if stretched == 0 {
		t.Fatal("no op of B's engine was stretched")
	}
	checked := 0
	for i := range r.Requests {
		q := &r.Requests[i]
		if q.Engine != b {
			if c := r.InterferenceCost(q); c != (InterferenceCost{}) {
				t.Fatalf("%s of an engine nothing slows costs %+v", q.ID, c)
			}
			continue
		}
		var want InterferenceCost
		for k, si := range q.Steps {
			st := &r.Steps[si]
			for _, op := range r.Ops[st.FirstOp:st.EndOp] {
				switch {
				case k == 0 && op.Kind == KernelOp:
					want.Prefill += op.Interference
				case k == 0:
					want.CopyPrefill += op.Interference
				case op.Kind == KernelOp:
					want.Decode += op.Interference
				default:
					want.CopyDecode += op.Interference
				}
			}
		}
		if got := r.InterferenceCost(q); got != want {
			t.Fatalf("%s: InterferenceCost %+v, its steps hold %+v", q.ID, got, want)
		}
		checked++
	}
	t.Logf("%d of B's ops stretched, worst deviation from the model %.2g of a duration, %d requests checked", stretched, worst, checked)
}

// The other mechanisms keep their own equations: overlap-proportional
// stretch adds Slowdown/(1 + Slowdown) of the time A covers of the op's
// interval; step-coincident stretch puts one factor in [1, 1 + Slowdown] on
// every op of a step, whatever each op's own overlap.
func TestInterferenceMechanisms(t *testing.T) {
	const s = 0.35
	for _, mech := range []Mechanism{StretchRate, StretchStep} {
		t.Run(mech.String(), func(t *testing.T) {
			cfg := MultiTenantGPUConfig(4, 10*time.Second, s)
			cfg.Interference[0].Mechanism = mech
			r, err := Generate(cfg)
			if err != nil {
				t.Fatal(err)
			}
			engine := map[string]int{}
			for i, e := range r.Engines {
				engine[e.Model] = i
			}
			busyA := r.kernelUnion(engine["engine-a"])
			stretchedSteps := 0
			for si := range r.Steps {
				st := &r.Steps[si]
				if st.Engine != engine["engine-b"] {
					continue
				}
				lo, hi := math.Inf(1), math.Inf(-1)
				for i, op := range r.Ops[st.FirstOp:st.EndOp] {
					d := op.End - op.Start
					base := d - op.Interference
					if op.Interference < 0 || base <= 0 {
						t.Fatalf("step %d op %d: duration %d, interference %d", si, i, d, op.Interference)
					}
					switch mech {
					case StretchRate:
						want := float64(base) + s/(1+s)*float64(covered(busyA, op.Start, op.End))
						if dev := math.Abs(float64(d) - want); dev > 1 && dev > 1e-3*float64(d) {
							t.Fatalf("step %d op %d: lasts %d ns, base %d + %.3f × covered = %.0f", si, i, d, base, s/(1+s), want)
						}
					case StretchStep:
						if base < 1000 {
							continue // rounding dominates the ratio
						}
						f := float64(d) / float64(base)
						lo, hi = math.Min(lo, f), math.Max(hi, f)
					}
				}
				if mech == StretchStep && hi >= lo {
					if lo < 1-1e-3 || hi > 1+s+1e-3 || hi-lo > 2e-3 {
						t.Fatalf("step %d: its ops stretched by %.4f … %.4f, want one factor in [1, %.2f]", si, lo, hi, 1+s)
					}
					if lo > 1+1e-3 {
						stretchedSteps++
					}
				}
			}
			if mech == StretchStep && stretchedSteps == 0 {
				t.Fatal("no step of B's engine was stretched")
			}
		})
	}
}

// Decode steps replay the graph captured for their padded batch size, as
// vLLM does: a kernel's graph is the one of the smallest capture size that
// holds its step's batch, numbered in capture order (largest first), so an
// engine has at most one graph ID per capture size, not one per step.
func TestCUDAGraphPerCaptureSize(t *testing.T) {
	for _, c := range []struct{ batch, size int }{{1, 1}, {3, 4}, {8, 8}, {9, 16}, {255, 256}, {257, 272}, {512, 512}, {900, 512}} {
		want := uint32(len(captureSizes) - slices.Index(captureSizes, c.size))
		if got := cudaGraphID(c.batch); got != want {
			t.Errorf("batch %d: graph %d, want %d (the graph of size %d)", c.batch, got, want, c.size)
		}
	}
	cfg := DefaultConfig(3, 8*time.Second)
	cfg.CUDAGraphs = true
	r, err := Generate(cfg)
	if err != nil {
		t.Fatal(err)
	}
	g := r.GPUTrace()
	graphs := map[uint32]bool{}
	graphed := 0
	for i := range g.GPUOps {
		if id := g.ShapeOf(&g.GPUOps[i]).GraphID; id != 0 {
			graphs[id] = true
			graphed++
		}
	}
	steps := 0
	for _, st := range r.Steps {
		if st.Phase == "decode" {
			steps++
		}
	}
	if graphed == 0 || len(graphs) < 2 || len(graphs) > len(captureSizes) || len(graphs) >= steps {
		t.Fatalf("%d graph IDs over %d graphed kernels of %d decode steps, want 2 to %d", len(graphs), graphed, steps, len(captureSizes))
	}
}
