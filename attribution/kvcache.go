package attribution

import (
	"cmp"
	"math"
	"slices"

	"github.com/llmprof/llmprof/ingest"
	"github.com/llmprof/llmprof/internal/stat"
)

// KV-cache facts come from llm.kv_cache.lookup spans below the request
// (llm.kv_cache.hit, llm.kv_cache.hit_tokens) or from cached-token counts on
// the request span (GenAI semantic conventions, OpenInference, vLLM).
var (
	keyKVHit       = keys("llm.kv_cache.hit")
	keyKVHitTokens = keys("llm.kv_cache.hit_tokens", "gen_ai.usage.cache_read.input_tokens", "gen_ai.usage.cached_tokens", "llm.token_count.prompt_details.cache_read")
)

// KVCache is the KV-cache section: how often prompts hit the prefix cache,
// what a hit buys, and which reported hits behave like misses.
type KVCache struct {
	// Requests counts requests with cache information.
	Requests int `json:"requests"`
	Hits     int `json:"hits"`
	// HitShare is Hits / Requests; TokenHitRatio cached / input tokens.
	HitShare      float64 `json:"hit_share"`
	TokenHitRatio float64 `json:"token_hit_ratio"`
	// Prefill and TTFT of hits and misses, in ms.
	HitPrefill  Distribution `json:"hit_prefill"`
	MissPrefill Distribution `json:"miss_prefill"`
	HitTTFT     Distribution `json:"hit_ttft"`
	MissTTFT    Distribution `json:"miss_ttft"`
	// Inflated lists reported hits whose prefill time matches a miss of the
	// same length: the cache key ignored something and the prefix was
	// recomputed (the seed article's "inflated hit ratio", §2.4).
	Inflated []InflatedHit `json:"inflated"`
	// Checked counts hits a test could judge: by step accounting (exact,
	// when llm.step spans report the tokens each step computed) or by
	// timing (a hit whose saving is smaller than the prefill noise cannot be
	// told from a miss).
	Checked      int `json:"checked"`
	ByAccounting int `json:"checked_by_step_accounting"`
	ByTiming     int `json:"checked_by_timing"`
	// EffectiveHitShare is the hit share once inflated hits count as misses.
	EffectiveHitShare float64 `json:"effective_hit_share"`
	// Groups breaks hits down per model and tenant.
	ByModel  []KVGroup `json:"by_model"`
	ByTenant []KVGroup `json:"by_tenant"`
	// Note explains what could not be computed.
	Note string `json:"note,omitempty"`
}

// KVGroup is the cache summary of one model or tenant.
type KVGroup struct {
	Name     string  `json:"name"`
	Requests int     `json:"requests"`
	Hits     int     `json:"hits"`
	HitShare float64 `json:"hit_share"`
	Inflated int     `json:"inflated"`
}

// InflatedHit is one suspicious hit.
type InflatedHit struct {
	ID           string  `json:"id"`
	Tenant       string  `json:"tenant"`
	Model        string  `json:"model"`
	InputTokens  int     `json:"input_tokens"`
	CachedTokens int     `json:"cached_tokens"`
	PrefillMs    float64 `json:"prefill_ms"`
	// Method is "step-accounting" or "timing".
	Method string `json:"method"`
	// ExpectedHitMs and ExpectedMissMs are the prefill times the misses'
	// fit predicts for this request as a real hit and as a miss (null when
	// step accounting decided).
	ExpectedHitMs  Float `json:"expected_hit_ms"`
	ExpectedMissMs Float `json:"expected_miss_ms"`
}

// cacheInfo reads a request's cache facts, of its span i, descendants desc,
// prompt length input (−1 when unknown) and cache hit ratio attribute ratio
// (NaN when absent); cached = −1 when unknown.
func cacheInfo(t *ingest.Trace, k *keyCache, i int, desc []int, input int, ratio float64) (hit bool, known bool, cached int) {
	cached = -1
	read := func(attrs []ingest.Attr) {
		if _, v, ok := k.first(attrs, keyKVHit); ok && v.Kind() == ingest.KindBool {
			hit, known = v.Bool(), true
		}
		if n, ok := k.count(attrs, keyKVHitTokens); ok {
			cached = n
			if !known {
				hit, known = n > 0, true
			}
		}
	}
	read(t.SpanAttrs(&t.Spans[i]))
	for _, d := range desc {
		if t.Str(t.Spans[d].Name) == "llm.kv_cache.lookup" {
			read(t.SpanAttrs(&t.Spans[d]))
		}
	}
	if !known && !math.IsNaN(ratio) {
		hit, known = ratio > 0, true
		if input > 0 {
			cached = int(math.Round(ratio * float64(input)))
		}
	}
	return hit, known, cached
}

// kvCache builds the section. The inflated-hit test fits prefill time
// against prompt length on the misses of each model (Theil–Sen — the median
// of pairwise slopes, Sen 1968 — robust to
// the batching noise of continuous batching), then asks of every hit whether
// its prefill is closer to the fit's prediction for a miss than for a hit of
// its cached length. A hit is judged only when the saving the fit predicts
// exceeds twice the misses' median absolute residual.
// tenants and models number the requests' tenants and models.
func kvCache(res *Result, rows []kvRow, steps []Step, engines []Engine, tenants, models groups) *KVCache {
	reqs := res.Requests
	kv := &KVCache{}
	verdict := stepAccounting(reqs, steps, engines)
	// Counted first, so that the lists below are made to size: grown by
	// append, they left as much again in garbage (1 MB a run on the
	// 30 MiB OTLP dump).
	hits := 0
	perModel := make([]int32, len(models.names))
	for _, q := range rows {
		perModel[models.of[q.req]]++
		if q.hit {
			hits++
		}
	}
	known := len(rows)
	hitPrefill, missPrefill := make([]float64, 0, hits), make([]float64, 0, known-hits)
	hitTTFT, missTTFT := make([]float64, 0, hits), make([]float64, 0, known-hits)
	var cachedTok, inputTok int64
	byModel := carveByGroup(make([]int, known), perModel) // by model number, its rows
	// Each model's and tenant's requests and hits, counted in this walk;
	// their inflated hits once the requests are flagged (the loop over
	// inflated below).
	modelKV, tenantKV := make([]KVGroup, len(models.names)), make([]KVGroup, len(tenants.names))
	for j := range rows {
		q := &rows[j]
		kv.Requests++
		gm, gt := &modelKV[models.of[q.req]], &tenantKV[tenants.of[q.req]]
		gm.Requests++
		gt.Requests++
		pre := float64(q.prefill)
		if q.hit {
			gm.Hits++
			gt.Hits++
			kv.Hits++
			hitPrefill = append(hitPrefill, pre)
			hitTTFT = appendKnown(hitTTFT, q.ttft)
		} else {
			missPrefill = append(missPrefill, pre)
			missTTFT = appendKnown(missTTFT, q.ttft)
		}
		if q.cached > 0 && q.input > 0 {
			cachedTok += int64(q.cached)
		}
		if q.input > 0 {
			inputTok += int64(q.input)
		}
		byModel[models.of[q.req]] = append(byModel[models.of[q.req]], j)
	}
	if kv.Requests == 0 {
		return nil
	}
	kv.HitShare = float64(kv.Hits) / float64(kv.Requests)
	if inputTok > 0 {
		kv.TokenHitRatio = float64(cachedTok) / float64(inputTok)
	}
	kv.HitPrefill, kv.MissPrefill = distribution(hitPrefill), distribution(missPrefill)
	kv.HitTTFT, kv.MissTTFT = distribution(hitTTFT), distribution(missTTFT)

	inflated := map[int]bool{}
	flag := func(i int, method string, expHit, expMiss float64) {
		r := &reqs[i]
		inflated[i] = true
		kv.Inflated = append(kv.Inflated, InflatedHit{
			ID: res.ID(r), Tenant: res.Tenant(r), Model: res.Model(r), InputTokens: r.InputTokens, CachedTokens: r.CachedTokens,
			PrefillMs: float64(r.Stages[StagePrefill]) / 1e6, Method: method,
			ExpectedHitMs: Float(expHit / 1e6), ExpectedMissMs: Float(expMiss / 1e6),
		})
	}
	for i, v := range verdict {
		kv.Checked++
		kv.ByAccounting++
		if v > 0 {
			flag(i, "step-accounting", math.NaN(), math.NaN())
		}
	}
	// The models by name.
	var order []int32
	for g, idx := range byModel {
		if len(idx) > 0 {
			order = append(order, int32(g))
		}
	}
	slices.SortFunc(order, func(a, b int32) int { return cmp.Compare(models.names[a], models.names[b]) })
	for _, g := range order {
		m, idx := models.names[g], byModel[g]
		var xs, ys []float64
		for _, j := range idx {
			q := &rows[j]
			if !q.hit && q.input > 0 && q.prefill > 0 {
				xs = append(xs, float64(q.input))
				ys = append(ys, float64(q.prefill))
			}
		}
		if len(xs) < 10 {
			kv.Note = "too few misses to model prefill time for model " + m + " (need 10)"
			continue
		}
		a, b, ok := stat.TheilSen(xs, ys)
		if !ok || b <= 0 {
			kv.Note = "prefill time does not grow with prompt length for model " + m + "; inflated hits cannot be told apart"
			continue
		}
		res := make([]float64, len(xs))
		for j := range xs {
			res[j] = math.Abs(ys[j] - (a + b*xs[j]))
		}
		slices.Sort(res)
		mad := Percentile(res, 50)
		for _, j := range idx {
			q := &rows[j]
			if _, decided := verdict[int(q.req)]; decided || !q.hit || q.cached <= 0 || q.input <= 0 || q.prefill <= 0 {
				continue
			}
			saving := b * float64(q.cached)
			if saving <= 2*mad {
				continue
			}
			kv.Checked++
			kv.ByTiming++
			expHit := a + b*float64(q.input-q.cached)
			expMiss := a + b*float64(q.input)
			if float64(q.prefill) > (expHit+expMiss)/2 {
				flag(int(q.req), "timing", expHit, expMiss)
			}
		}
	}
	slices.SortFunc(kv.Inflated, func(a, b InflatedHit) int { return cmp.Compare(a.ID, b.ID) })
	kv.EffectiveHitShare = float64(kv.Hits-len(kv.Inflated)) / float64(kv.Requests)
	for i := range inflated {
		if reqs[i].CacheKnown {
			modelKV[models.of[i]].Inflated++
			tenantKV[tenants.of[i]].Inflated++
		}
	}
	kv.ByModel = kvGroups(modelKV, models)
	kv.ByTenant = kvGroups(tenantKV, tenants)
	return kv
}

// kvRow is what kvCache reads of a request that reports the prefix cache
// (Request.CacheKnown), 40 bytes of its 256: requestTally keeps one for
// each as the requests are built, where kvCache's walks read the requests
// again, every one twice (a count, then the sums) and those that report
// the cache twice more, after the memory budget had dropped the table's
// pages (internal/spill).
type kvRow struct {
	req           int32 // the request's index
	hit           bool  // Request.CacheHit
	prefill       int64 // Request.Stages[StagePrefill]
	ttft          float64
	input, cached int // Request.InputTokens, CachedTokens
}

// kvRowOf is the row of request i, r.
func kvRowOf(i int, r *Request) kvRow {
	return kvRow{req: int32(i), hit: r.CacheHit, prefill: r.Stages[StagePrefill], ttft: r.TTFT, input: r.InputTokens, cached: r.CachedTokens}
}

// kvGroups names the groups of gs whose requests report the cache, groups
// counted by group number (kvCache counts them in its walk of the
// requests, where each walk of its own read them all again), and sorts
// them by name; groups with none are left out.
func kvGroups(groups []KVGroup, gs groups) []KVGroup {
	out := make([]KVGroup, 0, len(groups))
	for n, g := range groups {
		if g.Requests == 0 {
			continue
		}
		g.Name = gs.names[n]
		g.HitShare = float64(g.Hits) / float64(g.Requests)
		out = append(out, g)
	}
	slices.SortFunc(out, func(a, b KVGroup) int { return cmp.Compare(a.Name, b.Name) })
	return out
}

// stepAccounting decides reported hits exactly where steps report the tokens
// they computed (llm.batch.tokens = prompt tokens computed + one per decoding
// request). In each step, the requests new to the batch prefill: a first
// admission computes its prompt minus what the cache holds, a re-admission
// after preemption recomputes prompt and output so far. The tokens left over
// once those are accounted for must be the cached prefixes that were
// recomputed anyway; when exactly one subset of the step's hits explains them,
// those hits were inflated and the others genuine. Returns +1 (inflated) or
// −1 (genuine) per decided request.
func stepAccounting(reqs []Request, steps []Step, engines []Engine) map[int]int8 {
	verdict := map[int]int8{}
	for _, e := range engines {
		prev := map[int32]bool{}
		done := map[int32]int{} // steps each request took part in so far
		for _, si := range e.Steps {
			st := &steps[si]
			cur := make(map[int32]bool, len(st.Requests))
			var fresh []int32
			for _, q := range st.Requests {
				cur[q] = true
				if !prev[q] {
					fresh = append(fresh, q)
				}
			}
			ok := st.Tokens >= 0 && len(st.Requests) == st.Size
			residual := st.Tokens - (len(st.Requests) - len(fresh))
			var hits []int32
			for _, q := range fresh {
				r := &reqs[q]
				if r.InputTokens < 0 {
					ok = false
					break
				}
				switch {
				case done[q] > 0: // re-admitted after preemption: full recompute
					residual -= r.InputTokens + done[q]
				case r.CacheHit && r.CachedTokens > 0:
					residual -= r.InputTokens - r.CachedTokens
					hits = append(hits, q)
				default:
					residual -= r.InputTokens
				}
			}
			if ok && len(hits) > 0 && len(hits) <= 12 && residual >= 0 {
				if subset, unique := uniqueSubset(reqs, hits, residual); unique {
					for j, q := range hits {
						if subset&(1<<j) != 0 {
							verdict[int(q)] = 1
						} else {
							verdict[int(q)] = -1
						}
					}
				}
			}
			for _, q := range st.Requests {
				done[q]++
			}
			prev = cur
		}
	}
	return verdict
}

// uniqueSubset finds the one subset of hits whose cached tokens sum to
// target (as a bit mask), if exactly one does.
func uniqueSubset(reqs []Request, hits []int32, target int) (uint32, bool) {
	found, count := uint32(0), 0
	for mask := uint32(0); mask < 1<<len(hits); mask++ {
		sum := 0
		for j, q := range hits {
			if mask&(1<<j) != 0 {
				sum += reqs[q].CachedTokens
			}
		}
		if sum == target {
			found = mask
			count++
			if count > 1 {
				return 0, false
			}
		}
	}
	return found, count == 1
}
