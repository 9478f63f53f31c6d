package synth

import "github.com/llmprof/llmprof/ingest"

// Run is a generated serving run and its ground truth. All times are Unix ns
// on the reference clock.
type Run struct {
	Config   Config
	Engines  []Engine
	Requests []Request
	Steps    []Step
	Ops      []Op
	// OpNames are the ops' names (Op.NameID): kernel names as vLLM's
	// profiles show them on Hopper, and the copies' and fills' as nsys
	// names them.
	OpNames []string
	// End is when the last request finished.
	End int64
}

// Engine is the serving process of one model.
type Engine struct {
	Model  string
	Device int
	TP     int
	Pid    uint32
	Tid    uint32 // the engine (scheduler/model-runner) thread
	// Tenants are the tenants whose requests this engine serves.
	Tenants []string
	// LoadStart and LoadEnd bracket the model load before the first request.
	LoadStart, LoadEnd int64
}

// Request is one request's life and truth.
type Request struct {
	Index  int
	ID     string
	Tenant string
	Model  string
	Engine int

	TraceID [16]byte
	SpanID  [8]byte

	// Arrival is when the server received the request; Enqueued when
	// tokenization ended and it joined the scheduler's queue; FirstScheduled
	// the start of the first step that included it.
	Arrival, Enqueued, FirstScheduled int64
	// Tokens are the emission times of the output tokens, in order.
	Tokens []int64
	// StreamStart is when detokenization ended and the final response began
	// streaming; End is when it was fully streamed.
	StreamStart, End int64

	InputTokens, OutputTokens int
	// CacheHit is what the server reports; CachedTokens how many prompt
	// tokens it says were cached. InflatedHit marks a reported hit whose
	// prefix was recomputed anyway.
	CacheHit     bool
	CachedTokens int
	InflatedHit  bool

	// Steps are the indices of the steps that included the request.
	Steps []int
	// Preemptions are the intervals the request spent evicted, from the
	// start of the step that dropped it to the start of the step that
	// re-admitted it.
	Preemptions []Interval

	Finish string
}

// Interval is [From, To) in ns.
type Interval struct{ From, To int64 }

// FirstToken is the emission time of the first output token.
func (r *Request) FirstToken() int64 { return r.Tokens[0] }

// LastToken is the emission time of the last output token.
func (r *Request) LastToken() int64 { return r.Tokens[len(r.Tokens)-1] }

// Truth of the request-level stages, in ns; they sum to End − Arrival.
func (r *Request) Tokenize() int64   { return r.Enqueued - r.Arrival }
func (r *Request) Queue() int64      { return r.FirstScheduled - r.Enqueued }
func (r *Request) Prefill() int64    { return r.FirstToken() - r.FirstScheduled }
func (r *Request) Decode() int64     { return r.LastToken() - r.FirstToken() }
func (r *Request) E2E() int64        { return r.End - r.Arrival }
func (r *Request) TTFT() int64       { return r.FirstToken() - r.Arrival }
func (r *Request) Detokenize() int64 { return r.StreamStart - r.LastToken() }
func (r *Request) Stream() int64     { return r.End - r.StreamStart }

// TPOT is (last − first token) / (tokens − 1); ok is false for one token.
func (r *Request) TPOT() (float64, bool) {
	if len(r.Tokens) < 2 {
		return 0, false
	}
	return float64(r.Decode()) / float64(len(r.Tokens)-1), true
}

// Step is one engine iteration (a batched forward pass).
type Step struct {
	Index  int
	Engine int
	// Start and End bracket the step on the engine thread.
	Start, End int64
	Phase      string // "prefill", "decode" or "mixed"
	Requests   []int  // request indices in the batch
	// PrefillTokens are prompt tokens computed in this step; DecodeTokens the
	// requests decoding one token each.
	PrefillTokens, DecodeTokens int
	// Ops are the step's GPU operations, Ops[FirstOp:EndOp] of the run.
	FirstOp, EndOp int
	TraceID        [16]byte
	SpanID         [8]byte
	// Stalled marks a step whose launches were delayed by a CPU stall.
	Stalled bool
}

// OpKind says whether an op is a kernel or a copy.
type OpKind uint8

const (
	KernelOp OpKind = iota
	MemcpyHtoD
	MemcpyDtoH
	// Memset is a device fill (cudaMemsetAsync), as PyTorch issues to zero
	// a buffer.
	Memset
)

// Op is one GPU operation with the CPU call that launched it. It holds no
// pointer (its name is an index), so that the collector never scans the
// tens of millions a long run holds; 72 bytes.
type Op struct {
	Step int
	// NameID is the op's name: Run.OpNames[NameID] (Run.OpName).
	NameID      uint16
	Category    ingest.KernelCategory
	Kind        OpKind
	Correlation uint32
	// Start and End on the GPU; LaunchStart and LaunchEnd the CUDA API call
	// on the engine thread.
	Start, End             int64
	LaunchStart, LaunchEnd int64
	Bytes                  uint64
	// Interference is the part of the op's duration that other tenants'
	// concurrent kernels added (Config.Interference, interference.go): its
	// duration less the one it would have had alone, in ns; 0 when nothing
	// slows its engine.
	Interference  int64
	GridX, BlockX uint32
}

// OpName is op's name.
func (r *Run) OpName(op *Op) string { return r.OpNames[op.NameID] }

// StepGPU summarizes a step's GPU time: per-category busy time, the idle
// gaps between its ops, and its first and last op times.
func (r *Run) StepGPU(s *Step) (byCat [ingest.NumKernelCategories]int64, idle, first, last int64) {
	ops := r.Ops[s.FirstOp:s.EndOp]
	if len(ops) == 0 {
		return byCat, 0, s.Start, s.Start
	}
	first, last = ops[0].Start, ops[len(ops)-1].End
	var busy int64
	for i := range ops {
		d := ops[i].End - ops[i].Start
		byCat[ops[i].Category] += d
		busy += d
	}
	return byCat, (last - first) - busy, first, last
}
