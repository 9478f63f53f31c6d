package ingest

// The identifiers of requests, steps and tenants in the spans servers and
// SDKs emit, each written once: attribution reads requests and steps with
// them, align anchors NVTX ranges that name the same IDs, causal maps
// processes to tenants. Sources: docs/otlp-inputs.md §1–§3 and
// docs/design.md §5 (the llm.* conventions). Each list is in priority
// order: the first key present wins.
var (
	// RequestIDKeys carry a request's ID: llm.*, OTel GenAI, Triton's
	// tracer and SGLang's rid.
	RequestIDKeys = []string{"llm.request.id", "gen_ai.request.id", "gen_ai.response.id", "triton.request_id", "rid", "request_id"}
	// StepIDKeys carry an engine step's ID (llm.step spans).
	StepIDKeys = []string{"llm.step.id"}
	// TenantKeys name a request's tenant among its span's attributes
	// (--tenant-key replaces them).
	TenantKeys = []string{"llm.tenant", "tenant.id", "enduser.id"}
	// ResourceTenantKeys name a process's tenant among its resource's
	// attributes: TenantKeys, then the service's name, which a resource
	// always has and a span rarely does.
	ResourceTenantKeys = append(TenantKeys[:len(TenantKeys):len(TenantKeys)], "service.name")
)

// The span names of a whole request (llm.* and vLLM's) and of one engine
// step, which are preferred when several spans carry one ID (stage spans
// often repeat their request's).
const (
	SpanRequest     = "llm.request"
	SpanRequestVLLM = "llm_request"
	SpanStep        = "llm.step"
)
