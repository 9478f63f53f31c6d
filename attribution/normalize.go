package attribution

import (
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/llmprof/llmprof/ingest"
)

// The normalization table: for each concept llmprof needs, the attribute keys
// that carry it in the servers and SDKs in use, in priority order (the first
// present wins). Sources: docs/otlp-inputs.md §1–§3 (vLLM
// vllm/tracing.py and v1/engine/output_processor.py, SGLang trace.py, TGI
// router server.rs, Triton tracer.cc, OTel GenAI semantic conventions,
// OpenLIT, OpenLLMetry, OpenInference, Langfuse) and docs/design.md §5 for llm.*.
//
// Durations are in float seconds unless the key is listed in durationStrings
// (TGI records Rust Duration Debug strings such as "12.345ms").
var (
	keyRequestID = keys(ingest.RequestIDKeys...)
	keyModel     = keys("llm.model_id", "gen_ai.response.model", "gen_ai.request.model", "triton.model_name", "llm.model_name", "langfuse.observation.model.name")
	// Default tenant search (docs/design.md §5); --tenant-key replaces it.
	keyTenant = keys(ingest.TenantKeys...)

	keyInputTokens  = keys("llm.input_length", "gen_ai.usage.input_tokens", "gen_ai.usage.prompt_tokens", "llm.token_count.prompt", "llm.usage.prompt_tokens", "x-prompt-tokens")
	keyOutputTokens = keys("llm.output_length", "gen_ai.usage.output_tokens", "gen_ai.usage.completion_tokens", "llm.token_count.completion", "x-generated-tokens")

	keyTTFT   = keys("gen_ai.latency.time_to_first_token", "gen_ai.server.time_to_first_token", "gen_ai.response.time_to_first_chunk")
	keyTPOT   = keys("gen_ai.server.time_per_output_token")
	keyQueue  = keys("gen_ai.latency.time_in_queue", "queue_time")
	keyE2E    = keys("gen_ai.latency.e2e")
	keyPrefil = keys("gen_ai.latency.time_in_model_prefill")
	keyDecode = keys("gen_ai.latency.time_in_model_decode")
	// keyInference is prefill and decode together, when a source does not
	// split them (vLLM's time_in_model_inference, TGI's inference_time).
	keyInference = keys("gen_ai.latency.time_in_model_inference", "inference_time")
	// keyTokenize: TGI's validation step includes tokenization.
	keyTokenize   = keys("validation_time")
	keyTGIPerTok  = keys("time_per_token")
	keyCacheRatio = keys("llm.cache_hit_ratio")
	keyFinish     = keys("llm.finish_reason", "gen_ai.response.finish_reasons", "llm.response.finish_reason")
	// Langfuse's TTFT is an absolute ISO-8601 timestamp (JSON-quoted by its SDK).
	keyCompletionStart = keys("langfuse.observation.completion_start_time")
)

// durationStrings are keys whose values may be Rust Duration Debug strings.
var durationStrings = map[string]bool{
	"queue_time": true, "inference_time": true, "validation_time": true,
	"total_time": true, "time_per_token": true,
}

// spanNameIDs returns the IDs of the names the trace holds, in the order
// given, each once. A trace holds each string once (ingest.Strings), so a
// span has one of the names iff its name's ID is among them: a walk of the
// spans for a few names compares IDs, where reading each span's name and
// hashing it or matching a prefix cost more than the rest of the walk.
func spanNameIDs(t *ingest.Trace, names ...string) []ingest.StrID {
	var ids []ingest.StrID
	for _, name := range names {
		if id, ok := t.Strings.Lookup(name); ok && id != 0 && !slices.Contains(ids, id) {
			ids = append(ids, id)
		}
	}
	return ids
}

// Stage names of request spans (llm.* conventions and SGLang's RequestStage
// slices) and of Triton's timestamp events.
var stageSpanNames = map[string]Stage{
	"llm.tokenize":   StageTokenize,
	"llm.queue":      StageQueue,
	"llm.prefill":    StagePrefill,
	"llm.decode":     StageDecode,
	"llm.detokenize": StageDetokenize,
	"llm.stream":     StageStream,
	// SGLang 0.5 slices (RequestStage in python/sglang/srt/managers/
	// schedule_batch.py, later observability/req_time_stats.py; mapping in
	// docs/server-spans.md). Everything before prefill_waiting (the queue) is
	// input processing: tokenize, the dispatch to the scheduler and the
	// scheduler's request_process count as tokenize. decode_forward is the
	// whole decode phase; decode_loop and chunked_prefill are its and
	// prefill_forward's per-step children (overlaps count once). Thread spans
	// ("Tokenizer …", "Scheduler [TP n] …") are containers and no stage.
	"tokenize":                  StageTokenize,
	"api_server_dispatch":       StageTokenize,
	"dispatch":                  StageTokenize,
	"dpc_dispatch":              StageTokenize,
	"dc_dispatch":               StageTokenize,
	"request_process":           StageTokenize,
	"prefill_waiting":           StageQueue,
	"decode_waiting":            StageQueue,
	"prefill_prepare":           StagePrefill,
	"prefill_bootstrap":         StagePrefill,
	"prefill_forward":           StagePrefill,
	"chunked_prefill":           StagePrefill,
	"prefill_transfer_kv_cache": StagePrefill,
	"decode_prepare":            StageDecode,
	"decode_bootstrap":          StageDecode,
	"decode_transferred":        StageDecode,
	"decode_loop":               StageDecode,
	"decode_forward":            StageDecode,
	"spec_draft":                StageDecode,
	"spec_verify":               StageDecode,
	"spec_draft_extend":         StageDecode,
}

// keyList is one concept's attribute names in priority order (a row of the
// table above). Its slot numbers it among the lists, so that a keyCache
// resolves its names to the trace's interned IDs once per list instead of
// looking each name up on every span.
type keyList struct {
	names []string
	slot  int
}

// numKeyLists counts the package's lists; keys numbers them, and keeps
// them in packageKeyLists.
var (
	numKeyLists     int
	packageKeyLists []*keyList
)

// keys makes the package-level list of names.
func keys(names ...string) *keyList {
	numKeyLists++
	l := &keyList{names: names, slot: numKeyLists - 1}
	packageKeyLists = append(packageKeyLists, l)
	return l
}

// keyCache is the attribute view of one trace used while normalizing: each
// list's names are looked up in the trace once, and only the present ones
// are kept.
type keyCache struct {
	t *ingest.Trace
	// lists holds, by slot, the present names of each list resolved so
	// far; resolved says which.
	lists    [][]presentKey
	resolved []bool
	// tenantKeys is --tenant-key's list (nil: keyTenant).
	tenantKeys *keyList

	// The index of one span's attributes (index), which a request's many
	// lookups read instead of scanning them once per name: table maps the
	// ID of every present name of the package's lists to its place in rec
	// (open addressing, ID 0 for an empty entry); rec holds, for the
	// indexed attributes, each such name's first attribute plus one (0:
	// absent). tableState is 0 before the table is built, 1 when built, -1
	// when too many names to index.
	table      [keyTableSize]keyTableEntry
	tableState int8
	rec        []int32
	indexed    []ingest.Attr

	// services are each resource's service name (keyService), read once:
	// every request reads its own resource's, and its ancestors' (a run
	// has a few resources, its spans many).
	services []resourceService
}

// resourceService is a resource's service name, as str reads it (name, once
// named is set) and as label reads it for the labeler of (lbl, once of is
// set).
type resourceService struct {
	name  string
	named bool
	lbl   label
	of    *labeler
}

// service returns resource res's entry, its name read.
func (k *keyCache) service(res int32) *resourceService {
	if k.services == nil {
		k.services = make([]resourceService, len(k.t.Resources))
	}
	c := &k.services[res]
	if !c.named {
		c.name, _ = k.str(k.t.Resources[res].Attrs, keyService)
		c.named = true
	}
	return c
}

// serviceLabel is label of resource res's service name for l.
func (k *keyCache) serviceLabel(res int32, l *labeler) label {
	c := k.service(res)
	if c.of != l {
		c.lbl, _ = k.label(k.t.Resources[res].Attrs, keyService, l)
		c.of = l
	}
	return c.lbl
}

// presentKey is a name of a keyList that the trace holds; at is its place in
// keyCache.rec (-1: not indexed).
type presentKey struct {
	name string
	id   ingest.StrID
	at   int32
}

// keyTableSize is keyCache.table's size, at least twice the names it holds.
const keyTableSize = 256

type keyTableEntry struct {
	id ingest.StrID
	at int32
}

// slot returns the table entry for id: its own, or the empty one where it
// would go.
func (k *keyCache) slot(id ingest.StrID) *keyTableEntry {
	h := uint32(id) * 0x9E3779B1 >> 24 // keyTableSize = 1 << 8
	for {
		if e := &k.table[h]; e.id == id || e.id == 0 {
			return e
		}
		h = (h + 1) % keyTableSize
	}
}

// buildTable resolves every list of the package and numbers the IDs of
// their present names in the table.
func (k *keyCache) buildTable() {
	k.tableState = 1
	n := int32(0)
	for _, l := range packageKeyLists {
		k.resolved[l.slot] = false
		for i := range k.present(l) {
			pk := &k.lists[l.slot][i]
			e := k.slot(pk.id)
			if e.id == 0 {
				if int(n) >= keyTableSize/2 {
					k.tableState = -1
					return
				}
				*e = keyTableEntry{pk.id, n}
				n++
			}
			pk.at = e.at
		}
	}
	k.rec = make([]int32, n)
}

// index makes attrs the attributes that lookups read through the index.
func (k *keyCache) index(attrs []ingest.Attr) {
	if k.tableState == 0 {
		k.buildTable()
	}
	k.indexed = nil
	if k.tableState < 0 || len(attrs) == 0 {
		return
	}
	clear(k.rec)
	for i, a := range attrs {
		if a.Key == 0 {
			continue
		}
		if e := k.slot(a.Key); e.id != 0 && k.rec[e.at] == 0 {
			k.rec[e.at] = int32(i) + 1
		}
	}
	k.indexed = attrs
}

func newKeyCache(t *ingest.Trace) *keyCache {
	return &keyCache{t: t, lists: make([][]presentKey, numKeyLists), resolved: make([]bool, numKeyLists)}
}

// list makes a list of names for this cache alone (a key given on the
// command line), numbered after the package's.
func (k *keyCache) list(names ...string) *keyList {
	k.lists = append(k.lists, nil)
	k.resolved = append(k.resolved, false)
	return &keyList{names: names, slot: len(k.lists) - 1}
}

// present returns the names of l that the trace holds, in l's order.
// Small enough to inline: every lookup asks first, and once the index's
// table is built every list of the package is resolved.
func (k *keyCache) present(l *keyList) []presentKey {
	if k.resolved[l.slot] {
		return k.lists[l.slot]
	}
	return k.resolve(l)
}

// resolve looks the names of l up in the trace, for present (kept out of
// line, so that present inlines).
//
//go:noinline
func (k *keyCache) resolve(l *keyList) []presentKey {
	var ks []presentKey
	for _, name := range l.names {
		if id, ok := k.t.Key(name); ok {
			ks = append(ks, presentKey{name, id, -1})
		}
	}
	k.lists[l.slot], k.resolved[l.slot] = ks, true
	return ks
}

// first returns the first of keys present in attrs.
func (k *keyCache) first(attrs []ingest.Attr, keys *keyList) (string, ingest.Value, bool) {
	pks := k.present(keys)
	if len(attrs) > 0 && len(attrs) == len(k.indexed) && &attrs[0] == &k.indexed[0] {
		for _, pk := range pks {
			if pk.at < 0 {
				if v, ok := ingest.Get(attrs, pk.id); ok {
					return pk.name, v, true
				}
			} else if p := k.rec[pk.at]; p > 0 {
				// index put there the first attribute of the key.
				return pk.name, attrs[p-1].Value(), true
			}
		}
		return "", ingest.Value{}, false
	}
	for _, pk := range pks {
		if v, ok := ingest.Get(attrs, pk.id); ok {
			return pk.name, v, true
		}
	}
	return "", ingest.Value{}, false
}

func (k *keyCache) str(attrs []ingest.Attr, keys *keyList) (string, bool) {
	_, v, ok := k.first(attrs, keys)
	if !ok {
		return "", false
	}
	return k.valueStr(v)
}

// label is str as a label of l: a string value is the trace's own string,
// found without a lookup.
func (k *keyCache) label(attrs []ingest.Attr, keys *keyList, l *labeler) (label, bool) {
	_, v, ok := k.first(attrs, keys)
	if !ok {
		return 0, false
	}
	if v.Kind() == ingest.KindString {
		if k.t.Str(v.Str()) == "" {
			return 0, false
		}
		return traced(v.Str()), true
	}
	s, ok := k.valueStr(v)
	return l.of(s), ok
}

// valueStr is an attribute's value as str reads it.
func (k *keyCache) valueStr(v ingest.Value) (string, bool) {
	switch v.Kind() {
	case ingest.KindString:
		s := k.t.Str(v.Str())
		return s, s != ""
	case ingest.KindArray:
		l := k.t.StringList(v)
		return strings.Join(l, ","), len(l) > 0
	case ingest.KindEmpty:
		return "", false
	}
	return k.t.FormatValue(v), true
}

// count reads a token count (int, double, or a numeric string).
func (k *keyCache) count(attrs []ingest.Attr, keys *keyList) (int, bool) {
	_, v, ok := k.first(attrs, keys)
	if !ok {
		return 0, false
	}
	switch v.Kind() {
	case ingest.KindInt, ingest.KindDouble:
		f := v.Double()
		if math.IsNaN(f) || f < 0 || f > 1e12 {
			return 0, false
		}
		return int(f), true
	case ingest.KindString:
		n, err := strconv.ParseInt(strings.TrimSpace(k.t.Str(v.Str())), 10, 64)
		return int(n), err == nil && n >= 0
	}
	return 0, false
}

// duration reads a duration in ns: a number is seconds; a string is either a
// number of seconds or a Duration with a unit (TGI's "12.345ms", "850µs").
func (k *keyCache) duration(attrs []ingest.Attr, keys *keyList) (int64, bool) {
	key, v, ok := k.first(attrs, keys)
	if !ok {
		return 0, false
	}
	return k.durationOf(key, v)
}

// durationOf is duration of the value v of attribute key.
func (k *keyCache) durationOf(key string, v ingest.Value) (int64, bool) {
	switch v.Kind() {
	case ingest.KindDouble, ingest.KindInt:
		s := v.Double()
		if math.IsNaN(s) || math.IsInf(s, 0) || s < 0 {
			return 0, false
		}
		return int64(math.Round(s * 1e9)), true
	case ingest.KindString:
		str := k.t.Str(v.Str())
		if d, ok := parseRustDuration(str); ok {
			return d, true
		}
		if !durationStrings[key] {
			if s, err := strconv.ParseFloat(strings.TrimSpace(str), 64); err == nil && s >= 0 {
				return int64(math.Round(s * 1e9)), true
			}
		}
	}
	return 0, false
}

// parseRustDuration parses the Debug form of std::time::Duration ("1.2s",
// "12.345ms", "850µs", "850us", "42ns", also "1m2s" as Go prints it).
func parseRustDuration(s string) (int64, bool) {
	s = strings.TrimSpace(strings.Trim(strings.TrimSpace(s), `"`))
	if s == "" {
		return 0, false
	}
	units := []struct {
		suffix string
		ns     float64
	}{{"ns", 1}, {"µs", 1e3}, {"μs", 1e3}, {"us", 1e3}, {"ms", 1e6}, {"s", 1e9}}
	for _, u := range units {
		if num, ok := strings.CutSuffix(s, u.suffix); ok {
			f, err := strconv.ParseFloat(num, 64)
			if err != nil {
				break // "1m2s": fall through to Go's parser
			}
			if f < 0 || math.IsNaN(f) || math.IsInf(f, 0) {
				return 0, false
			}
			return int64(math.Round(f * u.ns)), true
		}
	}
	if d, err := time.ParseDuration(strings.ReplaceAll(s, "µs", "us")); err == nil && d >= 0 {
		return d.Nanoseconds(), true
	}
	return 0, false
}

// timestamp reads an absolute time: an ISO-8601 string (possibly JSON-quoted,
// as Langfuse's SDK writes it) or Unix ns as a number.
func (k *keyCache) timestamp(attrs []ingest.Attr, keys *keyList) (int64, bool) {
	_, v, ok := k.first(attrs, keys)
	if !ok {
		return 0, false
	}
	switch v.Kind() {
	case ingest.KindString:
		s := strings.Trim(strings.TrimSpace(k.t.Str(v.Str())), `"`)
		for _, layout := range []string{time.RFC3339Nano, "2006-01-02T15:04:05.999999999", "2006-01-02 15:04:05.999999999Z07:00"} {
			if ts, err := time.Parse(layout, s); err == nil {
				return ts.UnixNano(), true
			}
		}
	case ingest.KindInt:
		return v.Int(), v.Int() > 0
	}
	return 0, false
}

func (k *keyCache) float(attrs []ingest.Attr, keys *keyList) (float64, bool) {
	_, v, ok := k.first(attrs, keys)
	if !ok {
		return 0, false
	}
	f := v.Double()
	return f, !math.IsNaN(f)
}
