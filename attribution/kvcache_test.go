package attribution

import (
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/llmprof/llmprof/ingest"
)

func TestInflatedHitsFlagged(t *testing.T) {
	b := newBuilder()
	res := b.resource("engine")
	rng := rand.New(rand.NewPCG(1, 2))
	var wantInflated []string
	tr := byte(0)
	add := func(id string, input, cached int, prefillTokens int, hit bool) {
		tr++
		start := int64(tr) * 10_000 * ms
		prefill := 2*ms + int64(prefillTokens)*20_000 + int64(rng.IntN(200_000)) // 20 µs/token + noise
		// Tenant t1 has half the misses and the genuine hits, t2 the other
		// misses and the inflated hits.
		tenant := "t1"
		if strings.HasPrefix(id, "inflated") || id == "miss" && tr%2 == 0 {
			tenant = "t2"
		}
		r := b.span(tr, ingest.SpanID{}, res, "llm.request", start, start+prefill+50*ms,
			"llm.request.id", id, "llm.input_length", input, "llm.model_id", "m", "llm.tenant", tenant)
		kv := b.span(tr, r, res, "llm.kv_cache.lookup", start, start+ms)
		for i := range b.t.Spans {
			if b.t.Spans[i].ID == kv {
				s := &b.t.Spans[i]
				s.Attrs = b.t.AddAttrs(append(slices.Clone(b.t.SpanAttrs(s)), b.attr("llm.kv_cache.hit", hit), b.attr("llm.kv_cache.hit_tokens", cached))...)
			}
		}
		b.span(tr, r, res, "llm.prefill", start, start+prefill)
	}
	for i := 0; i < 40; i++ {
		in := 200 + rng.IntN(1800)
		add("miss", in, 0, in, false)
	}
	for i := 0; i < 20; i++ {
		in := 500 + rng.IntN(1500)
		add("hit", in, in*8/10, in-in*8/10, true)
	}
	for i := 0; i < 5; i++ {
		in := 600 + rng.IntN(1400)
		id := "inflated-" + string(rune('a'+i))
		wantInflated = append(wantInflated, id)
		add(id, in, in*8/10, in, true) // reported hit, full recompute
	}
	// A request that does not report the cache: its tenant and model are
	// left out of the groups.
	b.span(200, ingest.SpanID{}, res, "llm.request", 0, 60*ms, "llm.request.id", "no-cache", "llm.model_id", "m2", "llm.tenant", "t3")
	kv := b.analyze(DefaultOptions).KVCache
	if kv == nil || kv.Requests != 65 || kv.Hits != 25 {
		t.Fatalf("kv = %+v", kv)
	}
	var got []string
	for _, h := range kv.Inflated {
		got = append(got, h.ID)
	}
	slices.Sort(got)
	if !slices.Equal(got, wantInflated) {
		t.Fatalf("inflated hits = %v, want %v", got, wantInflated)
	}
	if kv.Checked != 25 || kv.EffectiveHitShare != 20.0/65 {
		t.Fatalf("checked %d, effective share %v", kv.Checked, kv.EffectiveHitShare)
	}
	wantModels := []KVGroup{{Name: "m", Requests: 65, Hits: 25, HitShare: 25.0 / 65, Inflated: 5}}
	wantTenants := []KVGroup{{Name: "t1", Requests: 40, Hits: 20, HitShare: 0.5}, {Name: "t2", Requests: 25, Hits: 5, HitShare: 0.2, Inflated: 5}}
	if !slices.Equal(kv.ByModel, wantModels) || !slices.Equal(kv.ByTenant, wantTenants) {
		t.Fatalf("by model %+v\nwant %+v\nby tenant %+v\nwant %+v", kv.ByModel, wantModels, kv.ByTenant, wantTenants)
	}
}

func TestModelReloadDelaysRequestsInFlight(t *testing.T) {
	b := newBuilder()
	res := b.resource("engine")
	b.span(100, ingest.SpanID{}, res, "llm.model.reload", 1000*ms, 3000*ms, "llm.model_id", "m")
	for i := 0; i < 6; i++ {
		arr := int64(i) * 1000 * ms
		ttft := 50 * ms
		if arr >= 1000*ms && arr < 3000*ms {
			ttft = 3000*ms - arr + 50*ms // waits for the reload
		}
		r := b.span(byte(i+1), ingest.SpanID{}, res, "llm.request", arr, arr+ttft+100*ms, "llm.model_id", "m")
		b.event(r, "llm.token", arr+ttft)
	}
	evs := b.analyze(DefaultOptions).ModelEvents
	if len(evs) != 1 || evs[0].Kind != "reload" || evs[0].InFlight != 2 || evs[0].AddedTTFTMs != 1500 {
		t.Fatalf("events = %+v", evs)
	}
}

// TestKVRowsTallied: the tally keeps a row for each request that reports
// the prefix cache, in request order, with its figures, as the rows grow
// past the size the first requests foretold.
func TestKVRowsTallied(t *testing.T) {
	b := newBuilder()
	res := b.resource("engine")
	known := 0
	for i := range 300 {
		start := int64(i+1) * 1000 * ms
		attrs := []any{"llm.request.id", "r", "llm.input_length", 100 + i}
		// None of the first 50 reports the cache, then every third.
		if i >= 50 && i%3 == 0 {
			attrs = append(attrs, "llm.kv_cache.hit", i%2 == 0, "llm.kv_cache.hit_tokens", i)
			known++
		}
		r := b.span(byte(i%250+1), ingest.SpanID{}, res, "llm.request", start, start+100*ms, attrs...)
		b.span(byte(i%250+1), r, res, "llm.prefill", start+ms, start+ms+int64(i)*ms/10)
	}
	out := b.analyze(DefaultOptions)
	var want []kvRow
	for i := range out.Requests {
		if r := &out.Requests[i]; r.CacheKnown {
			want = append(want, kvRow{req: int32(i), hit: r.CacheHit, prefill: r.Stages[StagePrefill], ttft: r.TTFT, input: r.InputTokens, cached: r.CachedTokens})
		}
	}
	if len(want) != known || out.KVCache == nil || out.KVCache.Requests != known {
		t.Fatalf("%d requests report the cache, want %d (kv %+v)", len(want), known, out.KVCache)
	}
	got := tallyOf(out).kv
	if !slices.EqualFunc(got, want, func(a, b kvRow) bool {
		return a.req == b.req && a.hit == b.hit && a.prefill == b.prefill && a.input == b.input && a.cached == b.cached &&
			(a.ttft == b.ttft || a.ttft != a.ttft && b.ttft != b.ttft)
	}) {
		t.Errorf("rows %+v\nwant %+v", got, want)
	}
}

// TestModelEventsByName: the events are the spans named llm.model.load,
// unload or reload, of each kind, in span order; a span whose name only
// starts so, or that an attribute value spells, is none.
func TestModelEventsByName(t *testing.T) {
	b := newBuilder()
	res := b.resource("engine")
	b.span(1, ingest.SpanID{}, res, "llm.model.unload", 100*ms, 200*ms, "llm.model_id", "m")
	b.span(2, ingest.SpanID{}, res, "llm.model.warmup", 300*ms, 400*ms, "llm.model_id", "llm.model.reload")
	b.span(3, ingest.SpanID{}, res, "llm.model.load", 500*ms, 900*ms, "llm.model_id", "m")
	b.span(4, ingest.SpanID{}, res, "llm.model.loaded", 1000*ms, 1100*ms)
	b.span(5, ingest.SpanID{}, res, "llm.request", 600*ms, 1200*ms, "llm.model_id", "m")
	evs := b.analyze(DefaultOptions).ModelEvents
	var got []string
	for _, ev := range evs {
		got = append(got, ev.Kind+"@"+ev.Model)
	}
	if want := []string{"unload@m", "load@m"}; !slices.Equal(got, want) {
		t.Fatalf("events %v, want %v", got, want)
	}
}
