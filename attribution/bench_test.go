package attribution

import (
	"encoding/binary"
	"fmt"
	"testing"

	"github.com/llmprof/llmprof/ingest"
)

// scaleTrace builds, directly in the model, a run of nReq requests × nTok
// tokens served in waves of 64 by one engine, one llm.step span per step
// mirrored by an NVTX range, and opsPerStep kernels per step each launched by
// a CUDA API call. It is the input of the scaling benchmark (issue 5: 100 k
// requests × 200 tokens with 2 M GPU ops).
func scaleTrace(nReq, nTok, opsPerStep int) *ingest.Trace {
	t := ingest.New()
	t.Sources = []ingest.Source{{Path: "scale", Format: "synthetic"}}
	s := t.Strings
	k := func(v string) ingest.StrID { return s.Intern(v) }
	t.Resources = []ingest.Resource{{Attrs: []ingest.Attr{
		ingest.NewAttr(k("service.name"), ingest.StringValue(k("engine"))),
		ingest.NewAttr(k("process.pid"), ingest.IntValue(100)),
	}}}
	reqName, stepName, tokName := k("llm.request"), k("llm.step"), k("llm.token")
	idKey, idxKey, batchKey, launch := k("llm.request.id"), k("llm.token.index"), k("llm.batch.request_ids"), k("cudaLaunchKernel")
	kernels := []ingest.StrID{k("sm90_xmma_gemm_bf16bf16_bf16f32"), k("flash_fwd_kernel"), k("rms_norm_kernel"), k("nccl_allreduce"), k("gatherTopK"), k("elementwise")}
	const wave = 64
	const stepNs = 5_000_000
	var corr uint32
	var id uint64
	next := func() (ingest.TraceID, ingest.SpanID) {
		id++
		var tr ingest.TraceID
		var sp ingest.SpanID
		binary.BigEndian.PutUint64(tr[:8], id)
		binary.BigEndian.PutUint64(sp[:], id)
		return tr, sp
	}
	at := int64(1_700_000_000_000_000_000)
	for w := 0; w*wave < nReq; w++ {
		n := min(wave, nReq-w*wave)
		start := at
		ids := make([]ingest.Value, n)
		for i := 0; i < n; i++ {
			tr, sp := next()
			rid := k(fmt.Sprintf("r%d", w*wave+i))
			ids[i] = ingest.StringValue(rid)
			evs := make([]ingest.Event, nTok)
			for j := range evs {
				evs[j] = ingest.Event{Name: tokName, Time: start + int64(j+1)*stepNs, Attrs: t.AddAttrs(ingest.NewAttr(idxKey, ingest.IntValue(int64(j))))}
			}
			t.Spans = append(t.Spans, ingest.Span{TraceID: tr, ID: sp, Name: reqName, Start: start - 1_000_000, End: start + int64(nTok)*stepNs + 1_000_000,
				Attrs: t.AddAttrs(ingest.NewAttr(idKey, ingest.StringValue(rid))), Extra: t.AddExtra(evs, nil), Resource: 0, Scope: -1})
		}
		arr := len(t.Arrays)
		t.Arrays = append(t.Arrays, ids)
		for j := 0; j < nTok; j++ {
			s0 := start + int64(j)*stepNs
			tr, sp := next()
			t.Spans = append(t.Spans, ingest.Span{TraceID: tr, ID: sp, Name: stepName, Start: s0, End: s0 + stepNs,
				Attrs: t.AddAttrs(ingest.NewAttr(batchKey, ingest.ArrayValue(arr))), Resource: 0, Scope: -1})
			t.Spans = append(t.Spans, ingest.Span{Name: k("step span_id=" + sp.String()), Start: s0 + 1000, End: s0 + stepNs - 1000,
				Pid: 100, Tid: 101, Origin: ingest.OriginNVTX, Resource: -1, Scope: -1})
			for o := 0; o < opsPerStep; o++ {
				corr++
				ls := s0 + 300_000 + int64(o)*5_000
				t.APICalls = append(t.APICalls, ingest.APICall{Name: launch, Start: ls, End: ls + 4_000, Pid: 100, Tid: 101, Correlation: corr,
					Origin: ingest.OriginCUDARuntime})
				os := s0 + 310_000 + int64(o)*(stepNs-500_000)/int64(opsPerStep)
				t.GPUOps = append(t.GPUOps, ingest.GPUOp{Start: os, End: os + (stepNs-600_000)/int64(opsPerStep), Name: kernels[o%len(kernels)],
					Pid: 100, Correlation: corr, Stream: 7})
			}
		}
		at = start + int64(nTok)*stepNs + 10_000_000
	}
	t.Validate()
	return t
}

// BenchmarkAttributionScale measures Analyze (requests, steps with their NVTX
// projection, the token breakdown walked twice for the summary and the
// stalls) at growing sizes: ns/token staying flat shows the O(n log n) sort
// and sweep. Run: go test ./attribution -run XXX -bench AttributionScale -benchtime 1x
func BenchmarkAttributionScale(b *testing.B) {
	for _, size := range []struct{ req, tok, ops int }{
		{6_250, 200, 6}, {25_000, 200, 6}, {100_000, 200, 6},
	} {
		name := fmt.Sprintf("requests=%d/tokens=%d", size.req, size.req*size.tok)
		b.Run(name, func(b *testing.B) {
			if testing.Short() && size.req > 10_000 {
				b.Skip("large size skipped with -short")
			}
			t := scaleTrace(size.req, size.tok, size.ops)
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				res := Analyze(t, DefaultOptions)
				if res.Tokens == nil || res.Tokens.Tokens != size.req*size.tok {
					b.Fatalf("tokens %v", res.Tokens)
				}
			}
			tokens := float64(size.req * size.tok)
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/tokens, "ns/token")
			b.ReportMetric(float64(len(t.GPUOps)), "gpu_ops")
		})
	}
}
