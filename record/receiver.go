package record

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"mime"
	"net"
	"net/http"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/zstd"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	_ "google.golang.org/grpc/encoding/gzip" // accept gzip-compressed gRPC exports
	"google.golang.org/grpc/keepalive"
	"google.golang.org/grpc/mem"
	"google.golang.org/grpc/peer"
	"google.golang.org/grpc/status"
	"google.golang.org/grpc/tap"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/types/known/durationpb"
)

// receiverLimits bound what clients can make the receiver hold: the
// defaults (defaultReceiverLimits) are listed, with measured figures, in
// docs/record.md.
type receiverLimits struct {
	// budget is the memory for request bodies in flight, over both
	// transports and every connection: HTTP bodies as read and
	// decompressed, decompressor windows, gRPC messages from the moment
	// their handler starts, and payloads queued for the capture writer.
	budget int64
	// budgetWait is how long a request waits for room before it is told
	// to retry (HTTP 429 with Retry-After, gRPC UNAVAILABLE with
	// RetryInfo: the OTLP back-pressure signals).
	budgetWait time.Duration
	// maxPayload bounds one HTTP body, decompressed; maxGRPCMessage one
	// gRPC message (a gRPC handler reserves twice that while gRPC reads
	// and decompresses it, then keeps what the payload needs).
	maxPayload, maxGRPCMessage int64
	// maxStreams bounds export requests being handled at once (both
	// transports: HTTP requests once their body is read, gRPC ones from
	// their headers); maxConns, connections per listener.
	maxStreams, maxConns int
	// bodyTimeout is how long a request may take to arrive whole (a body
	// that never comes); bodyStall how long an HTTP body may pause between
	// bytes, and a gRPC message take to arrive whole once its handler has
	// its room (a half-sent body ends fast and gives its room back);
	// exportTimeout bounds a gRPC export from its headers to its answer;
	// idleTimeout closes idle keep-alive connections.
	bodyTimeout, bodyStall, exportTimeout, idleTimeout time.Duration
}

var defaultReceiverLimits = receiverLimits{
	budget:         256 << 20,
	budgetWait:     2 * time.Second,
	maxPayload:     64 << 20,
	maxGRPCMessage: 16 << 20,
	maxStreams:     64,
	maxConns:       256,
	bodyTimeout:    10 * time.Second,
	bodyStall:      2 * time.Second,
	exportTimeout:  60 * time.Second,
	idleTimeout:    2 * time.Minute,
}

// Memory a decompressor holds besides its output, charged to the budget:
// gzip's 32 KiB window and tables; zstd's block buffers (its window is
// charged as the frame declares it).
const (
	gzipStateBytes    = 64 << 10
	zstdStateBytes    = 512 << 10
	bodyReadBufBytes  = 32 << 10
	initialBodyBuffer = 64 << 10
	// expansionGuess is the decompressed size an HTTP body is admitted
	// with, as a multiple of its compressed length (OTLP protobuf
	// compresses 5-10×); a zstd frame that declares its content size is
	// admitted with that instead. A body that decompresses to more grows
	// without waiting, or is told to retry.
	expansionGuess = 8
	readStep       = 1 << 20
)

// retryAfter is what a refused client is told to wait.
const retryAfter = time.Second

// payloadSink takes a received payload into the capture. It blocks while the
// capture's queue is full — back-pressure the client feels as a slower
// export — and fails only when the capture is closing or ctx ends.
type payloadSink func(ctx context.Context, p OTLPPayload) error

// Receiver is an OTLP receiver (gRPC and HTTP) that hands every export
// request, unparsed, to a sink. It ACKs traces, metrics and logs alike, so
// SDKs that export all signals do not log errors; the capture keeps all of
// them.
type Receiver struct {
	grpcLn, httpLn net.Listener
	grpcSrv        *grpc.Server
	httpSrv        *http.Server
	sink           payloadSink
	limits         receiverLimits
	budget         *memBudget
	streams        atomic.Int64 // export requests being handled
	// closing is closed when Stop begins, so blocked handlers give up and the
	// client is told to retry elsewhere rather than hang.
	closing   chan struct{}
	closeOnce sync.Once
	serveWG   sync.WaitGroup

	inflight     atomic.Int64
	lastActivity atomic.Int64 // CLOCK_MONOTONIC ns of the latest request start or end

	requests, spans, rejected, metrics, logs atomic.Int64
	// throttled counts requests refused for back-pressure (told to retry).
	throttled atomic.Int64
}

// ReceiverStats are the receiver's counters: requests accepted (all
// signals), spans in accepted trace requests, requests refused as malformed,
// and accepted metrics and logs requests.
type ReceiverStats struct {
	Requests, Spans, Rejected, Metrics, Logs int64
	// Throttled counts requests told to retry later (memory budget or
	// stream limit reached); PeakBodyBytes is the most body memory held
	// at once.
	Throttled, PeakBodyBytes int64
}

// startReceiver listens on grpcAddr and httpAddr and serves until Stop,
// with the default limits.
func startReceiver(grpcAddr, httpAddr string, sink payloadSink) (*Receiver, error) {
	return startReceiverLimits(grpcAddr, httpAddr, defaultReceiverLimits, sink)
}

// exportCtx is a gRPC export's context: the tap gives it the export's
// deadline, and the handler ends it (expire) early when the message has not
// arrived in time — as a deadline, so the client is told
// DEADLINE_EXCEEDED, not CANCELLED.
type exportCtx struct {
	context.Context // the export's deadline
	cancel          context.CancelFunc
	stopWatch       func() bool
	done            chan struct{}
	once            sync.Once
	mu              sync.Mutex
	err             error
}

func newExportCtx(parent context.Context, timeout time.Duration) *exportCtx {
	ctx, cancel := context.WithTimeout(parent, timeout)
	c := &exportCtx{Context: ctx, cancel: cancel, done: make(chan struct{})}
	c.stopWatch = context.AfterFunc(ctx, func() { c.end(ctx.Err()) })
	return c
}

func (c *exportCtx) Done() <-chan struct{} { return c.done }

func (c *exportCtx) Err() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.err
}

func (c *exportCtx) end(err error) {
	c.once.Do(func() {
		c.mu.Lock()
		c.err = err
		c.mu.Unlock()
		close(c.done)
	})
}

// expire ends the export now, as its deadline would.
func (c *exportCtx) expire() { c.end(context.DeadlineExceeded) }

// finish releases the context's resources once the export is answered.
func (c *exportCtx) finish() {
	c.stopWatch()
	c.end(context.Canceled)
	c.cancel()
}

// exportCtxKey carries the export's exportCtx from the tap, which makes
// it, to the handler, which ends it.
type exportCtxKey struct{}

func startReceiverLimits(grpcAddr, httpAddr string, lim receiverLimits, sink payloadSink) (*Receiver, error) {
	r := &Receiver{sink: sink, limits: lim, budget: newMemBudget(lim.budget), closing: make(chan struct{})}
	r.lastActivity.Store(monoNow())
	var err error
	if r.grpcLn, err = net.Listen(listenNetwork(listenHost(grpcAddr)), grpcAddr); err != nil {
		return nil, fmt.Errorf("OTLP gRPC receiver: %w", err)
	}
	if r.httpLn, err = net.Listen(listenNetwork(listenHost(httpAddr)), httpAddr); err != nil {
		r.grpcLn.Close()
		return nil, fmt.Errorf("OTLP HTTP receiver: %w", err)
	}
	r.grpcLn = newLimitListener(r.grpcLn, lim.maxConns)
	r.httpLn = newLimitListener(r.httpLn, lim.maxConns)
	r.grpcSrv = grpc.NewServer(
		grpc.ForceServerCodecV2(rawCodec{}),
		grpc.MaxRecvMsgSize(int(lim.maxGRPCMessage)),
		grpc.MaxConcurrentStreams(uint32(lim.maxStreams)),
		// A fixed flow-control window (no BDP growth) bounds what a stream
		// whose handler has not started can make the transport buffer.
		grpc.InitialWindowSize(1<<20),
		grpc.InitialConnWindowSize(1<<20),
		grpc.KeepaliveParams(keepalive.ServerParameters{MaxConnectionIdle: lim.idleTimeout}),
		// Every export gets a deadline, so a message that never arrives
		// ends the stream (the transport's reads watch this context).
		grpc.InTapHandle(func(ctx context.Context, _ *tap.Info) (context.Context, error) {
			ec := newExportCtx(ctx, lim.exportTimeout)
			return context.WithValue(ec, exportCtxKey{}, ec), nil
		}),
	)
	for _, s := range []struct{ service, signal string }{
		{"opentelemetry.proto.collector.trace.v1.TraceService", SignalTraces},
		{"opentelemetry.proto.collector.metrics.v1.MetricsService", SignalMetrics},
		{"opentelemetry.proto.collector.logs.v1.LogsService", SignalLogs},
	} {
		r.grpcSrv.RegisterService(&grpc.ServiceDesc{
			ServiceName: s.service,
			HandlerType: (*any)(nil),
			Methods:     []grpc.MethodDesc{{MethodName: "Export", Handler: r.grpcHandler(s.signal)}},
			Metadata:    "opentelemetry/proto/collector/" + s.signal + "_service.proto",
		}, r)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/v1/traces", r.httpHandler(SignalTraces))
	mux.HandleFunc("/v1/metrics", r.httpHandler(SignalMetrics))
	mux.HandleFunc("/v1/logs", r.httpHandler(SignalLogs))
	r.httpSrv = &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second, IdleTimeout: lim.idleTimeout}
	r.serveWG.Add(2)
	go func() { defer r.serveWG.Done(); _ = r.grpcSrv.Serve(r.grpcLn) }()
	go func() { defer r.serveWG.Done(); _ = r.httpSrv.Serve(r.httpLn) }()
	return r, nil
}

// GRPCAddr is the address the gRPC receiver listens on (host:port).
func (r *Receiver) GRPCAddr() string { return r.grpcLn.Addr().String() }

// HTTPAddr is the address the HTTP receiver listens on (host:port).
func (r *Receiver) HTTPAddr() string { return r.httpLn.Addr().String() }

// Stats returns the counters so far.
func (r *Receiver) Stats() ReceiverStats {
	_, peak := r.budget.usage()
	return ReceiverStats{
		Requests: r.requests.Load(), Spans: r.spans.Load(), Rejected: r.rejected.Load(),
		Metrics: r.metrics.Load(), Logs: r.logs.Load(), Throttled: r.throttled.Load(), PeakBodyBytes: peak,
	}
}

// Drain waits until no request has been in flight for quiet, or until max
// has passed: exporters of worker processes may still be flushing after the
// main child exits.
func (r *Receiver) Drain(quiet, max time.Duration) {
	deadline := time.Now().Add(max)
	for {
		idle := time.Duration(monoNow() - r.lastActivity.Load())
		if r.inflight.Load() == 0 && idle >= quiet {
			return
		}
		wait := min(quiet-idle, 50*time.Millisecond)
		if wait <= 0 {
			wait = 10 * time.Millisecond
		}
		if time.Now().Add(wait).After(deadline) {
			return
		}
		time.Sleep(wait)
	}
}

// Stop ends both servers. Requests in flight — possibly waiting for room in
// the capture — are let finish until ctx ends; only then are they refused
// (with a retryable status) and the servers closed hard.
func (r *Receiver) Stop(ctx context.Context) {
	done := make(chan struct{})
	go func() { r.grpcSrv.GracefulStop(); close(done) }()
	forced := r.httpSrv.Shutdown(ctx) != nil
	select {
	case <-done:
	case <-ctx.Done():
		forced = true
	}
	if forced {
		r.closeOnce.Do(func() { close(r.closing) })
		r.grpcSrv.Stop()
		_ = r.httpSrv.Close()
		<-done
	}
	r.serveWG.Wait()
}

// accept counts and sinks one payload. The request's context ends when the
// client gives up; closing ends blocked handlers at shutdown.
func (r *Receiver) accept(ctx context.Context, p OTLPPayload) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		select {
		case <-r.closing:
			cancel()
		case <-ctx.Done():
		}
	}()
	if err := r.sink(ctx, p); err != nil {
		p.releaseBody()
		return err
	}
	r.requests.Add(1)
	switch p.Signal {
	case SignalTraces:
		r.spans.Add(int64(p.Items))
	case SignalMetrics:
		r.metrics.Add(1)
	case SignalLogs:
		r.logs.Add(1)
	}
	return nil
}

func (r *Receiver) begin() func() {
	r.inflight.Add(1)
	r.lastActivity.Store(monoNow())
	return func() {
		r.lastActivity.Store(monoNow())
		r.inflight.Add(-1)
	}
}

// admit takes one of the maxStreams request slots, or says no.
func (r *Receiver) admit() (done func(), ok bool) {
	if r.streams.Add(1) > int64(r.limits.maxStreams) {
		r.streams.Add(-1)
		return nil, false
	}
	return func() { r.streams.Add(-1) }, true
}

// newCharge starts a request's charge; client names its connection, whose
// requests together are held to the budget's share.
func (r *Receiver) newCharge(ctx context.Context, client string) *charge {
	return &charge{b: r.budget, key: client, ctx: ctx, wait: r.limits.budgetWait}
}

// sinkRefusal words a sink failure for the client: the capture could not
// store the export (final: retrying cannot help, the recording is ending),
// or the receiver is shutting down (retryable, as OTLP defines it).
func sinkRefusal(err error) (final bool, msg string) {
	switch {
	case errors.Is(err, errNotStored):
		return true, "llmprof record could not store the export: " + err.Error()
	case errors.Is(err, context.DeadlineExceeded):
		return false, "llmprof record's capture writer is behind: the export timed out waiting for it"
	}
	return false, "llmprof record is shutting down: " + err.Error()
}

// throttledStatus is OTLP/gRPC back-pressure: UNAVAILABLE with a RetryInfo
// (opentelemetry-specification, protocol/otlp.md, "OTLP/gRPC Throttling").
func throttledStatus(msg string) error {
	st := status.New(codes.Unavailable, msg)
	if d, err := st.WithDetails(&errdetails.RetryInfo{RetryDelay: durationpb.New(retryAfter)}); err == nil {
		st = d
	}
	return st.Err()
}

// rawMessage carries a gRPC message's bytes untouched.
type rawMessage struct{ b []byte }

// rawCodec makes the gRPC server hand over request bytes exactly as they
// arrived (after gRPC's own decompression) instead of unmarshalling them:
// the capture stores what the client sent, unknown fields and all, and the
// receiver spends no time building objects it would only marshal again. The
// response, an empty ExportXServiceResponse, is zero bytes on the wire.
type rawCodec struct{}

func (rawCodec) Name() string { return "proto" }

func (rawCodec) Marshal(v any) (mem.BufferSlice, error) {
	m, ok := v.(*rawMessage)
	if !ok {
		return nil, fmt.Errorf("record: raw codec cannot marshal %T", v)
	}
	return mem.BufferSlice{mem.SliceBuffer(m.b)}, nil
}

func (rawCodec) Unmarshal(data mem.BufferSlice, v any) error {
	m, ok := v.(*rawMessage)
	if !ok {
		return fmt.Errorf("record: raw codec cannot unmarshal into %T", v)
	}
	m.b = data.Materialize()
	return nil
}

func (r *Receiver) grpcHandler(signal string) grpc.MethodHandler {
	return func(_ any, ctx context.Context, dec func(any) error, _ grpc.UnaryServerInterceptor) (any, error) {
		defer r.begin()()
		if ec, ok := ctx.Value(exportCtxKey{}).(*exportCtx); ok {
			defer ec.finish()
		}
		done, ok := r.admit()
		if !ok {
			r.throttled.Add(1)
			return nil, throttledStatus(fmt.Sprintf("llmprof record is handling %d exports; retry later", r.limits.maxStreams))
		}
		defer done()
		// gRPC reads the whole (compressed) message and decompresses it
		// inside dec: room for both is taken first, and what the payload
		// does not need is given back after.
		var client string
		if pr, ok := peer.FromContext(ctx); ok && pr.Addr != nil {
			client = pr.Addr.String()
		}
		c := r.newCharge(ctx, client)
		queued := false
		defer func() {
			if !queued { // once queued, the writer releases it
				c.release()
			}
		}()
		if err := c.admit(2 * r.limits.maxGRPCMessage); err != nil {
			r.throttled.Add(1)
			return nil, throttledStatus("llmprof record: " + err.Error() + "; retry later")
		}
		var in rawMessage
		if err := r.recvMessage(ctx, dec, &in); err != nil {
			r.rejected.Add(1)
			return nil, err
		}
		return r.grpcExport(ctx, signal, client, in.b, c, &queued)
	}
}

// recvMessage reads a gRPC message while its room is held: one that has
// not arrived whole within bodyStall ends the stream (its context), as a
// stalled HTTP body does, and gives the room back.
func (r *Receiver) recvMessage(ctx context.Context, dec func(any) error, in *rawMessage) error {
	ec, ok := ctx.Value(exportCtxKey{}).(*exportCtx)
	if !ok || r.limits.bodyStall <= 0 {
		return dec(in)
	}
	t := time.AfterFunc(r.limits.bodyStall, ec.expire)
	err := dec(in)
	if !t.Stop() { // fired: the stream's context is gone either way
		return status.Errorf(codes.DeadlineExceeded, "llmprof record: the message did not arrive within %v of its room being held", r.limits.bodyStall)
	}
	return err
}

// grpcExport counts and queues one gRPC message; *queued says the writer
// now owns c.
func (r *Receiver) grpcExport(ctx context.Context, signal, client string, b []byte, c *charge, queued *bool) (any, error) {
	c.shrinkTo(int64(cap(b)))
	p := OTLPPayload{
		RecvMonoNs: monoNow(), RecvRealNs: realNow(),
		Signal: signal, Transport: "grpc", Encoding: EncodingProto, Payload: b, Peer: client,
	}
	n, err := countItems(signal, EncodingProto, b)
	if err != nil {
		r.rejected.Add(1)
		return nil, status.Error(codes.InvalidArgument, err.Error())
	}
	p.Items = uint32(n)
	p.release = c.release
	if err := r.accept(ctx, p); err != nil {
		final, msg := sinkRefusal(err)
		if final {
			return nil, status.Error(codes.Internal, msg)
		}
		// Unavailable is retryable: an SDK will try again rather than drop
		// the batch.
		return nil, status.Error(codes.Unavailable, msg)
	}
	*queued = true
	return &rawMessage{}, nil
}

func (r *Receiver) httpHandler(signal string) http.HandlerFunc {
	return func(w http.ResponseWriter, req *http.Request) {
		defer r.begin()()
		if req.Method != http.MethodPost {
			w.Header().Set("Allow", http.MethodPost)
			httpError(w, EncodingJSON, http.StatusMethodNotAllowed, "OTLP/HTTP takes POST")
			return
		}
		// The whole body must arrive within bodyTimeout, and never pause
		// for more than bodyStall: one that stops coming gives back its
		// connection and its room soon.
		body := &stallReader{r: req.Body, rc: http.NewResponseController(w),
			end: time.Now().Add(r.limits.bodyTimeout), stall: r.limits.bodyStall}
		_ = body.rc.SetReadDeadline(body.end)
		enc, ok := payloadEncoding(req.Header.Get("Content-Type"))
		if !ok {
			r.rejected.Add(1)
			httpError(w, EncodingJSON, http.StatusUnsupportedMediaType,
				fmt.Sprintf("unsupported Content-Type %q: want application/x-protobuf or application/json", req.Header.Get("Content-Type")))
			return
		}
		contentEncoding := strings.ToLower(strings.TrimSpace(req.Header.Get("Content-Encoding")))
		c := r.newCharge(req.Context(), req.RemoteAddr)
		queued := false
		defer func() {
			if !queued { // once queued, the writer releases it
				c.release()
			}
		}()
		payload, status, err := readBody(body, contentEncoding, req.ContentLength, r.limits.maxPayload, c)
		if status == http.StatusTooManyRequests {
			r.throttled.Add(1)
			w.Header().Set("Retry-After", retryAfterHeader())
			w.Header().Set("Connection", "close") // the rest of the body is not read
			httpError(w, enc, status, "llmprof record: "+err.Error()+"; retry later")
			return
		}
		if err != nil {
			r.rejected.Add(1)
			httpError(w, enc, status, err.Error())
			return
		}
		n, err := countItems(signal, enc, payload)
		if err != nil {
			r.rejected.Add(1)
			httpError(w, enc, http.StatusBadRequest, err.Error())
			return
		}
		// A request slot is taken only now, with the body read: bodies on
		// their way (slow, half-sent, or bombs being refused) hold a
		// connection and their room, never a slot a whole request needs.
		done, ok := r.admit()
		if !ok {
			r.throttled.Add(1)
			w.Header().Set("Retry-After", retryAfterHeader())
			httpError(w, enc, http.StatusTooManyRequests,
				fmt.Sprintf("llmprof record is handling %d exports; retry later", r.limits.maxStreams))
			return
		}
		defer done()
		if contentEncoding == "identity" {
			contentEncoding = ""
		}
		p := OTLPPayload{
			RecvMonoNs: monoNow(), RecvRealNs: realNow(),
			Signal: signal, Transport: "http", Encoding: enc, ContentEncoding: contentEncoding,
			Peer: req.RemoteAddr, Items: uint32(n), Payload: payload, release: c.release,
		}
		if err := r.accept(req.Context(), p); err != nil {
			final, msg := sinkRefusal(err)
			if final {
				httpError(w, enc, http.StatusInternalServerError, msg)
				return
			}
			w.Header().Set("Retry-After", retryAfterHeader())
			httpError(w, enc, http.StatusServiceUnavailable, msg)
			return
		}
		queued = true
		// An empty ExportXServiceResponse: zero bytes in protobuf, {} in JSON.
		if enc == EncodingJSON {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusOK)
			_, _ = io.WriteString(w, "{}")
			return
		}
		w.Header().Set("Content-Type", "application/x-protobuf")
		w.WriteHeader(http.StatusOK)
	}
}

func payloadEncoding(contentType string) (string, bool) {
	mt, _, err := mime.ParseMediaType(contentType)
	if err != nil {
		return "", false
	}
	switch mt {
	case "application/x-protobuf", "application/protobuf":
		return EncodingProto, true
	case "application/json":
		return EncodingJSON, true
	}
	return "", false
}

// retryAfterHeader is the Retry-After value, in whole seconds.
func retryAfterHeader() string { return fmt.Sprint(int(retryAfter.Seconds())) }

// stallReader reads an HTTP body under two read deadlines: the whole body
// by end, and each read within stall of the one before.
type stallReader struct {
	r     io.Reader
	rc    *http.ResponseController
	end   time.Time
	stall time.Duration
}

func (s *stallReader) Read(p []byte) (int, error) {
	if s.stall > 0 {
		d := time.Now().Add(s.stall)
		if d.After(s.end) {
			d = s.end
		}
		_ = s.rc.SetReadDeadline(d)
	}
	return s.r.Read(p)
}

// readBody reads a request body, undoing its Content-Encoding, up to max
// bytes decompressed, charging c for everything it holds: the read buffer,
// the decompressor's state and window, and the output. It is admitted once,
// waiting in line, for all it expects to need: the declared length of an
// uncompressed body; for a compressed one the decompressor's state and
// window and a decompressed size (the one a zstd frame declares, else
// expansionGuess times the compressed length). More than that is taken
// without waiting, or the body is refused with 429. It returns the HTTP
// status for a failure: 429 when the budget had no room.
func readBody(body io.Reader, contentEncoding string, contentLength, max int64, c *charge) ([]byte, int, error) {
	fail := func(err error) ([]byte, int, error) {
		switch {
		case errors.Is(err, errOverBudget):
			return nil, http.StatusTooManyRequests, err
		case errors.Is(err, os.ErrDeadlineExceeded):
			return nil, http.StatusRequestTimeout, fmt.Errorf("the body did not arrive in time: %w", err)
		}
		return nil, http.StatusBadRequest, err
	}
	guess := func() int64 {
		if contentLength <= 0 {
			return initialBodyBuffer
		}
		if contentLength > max/expansionGuess {
			return max + 1
		}
		g := expansionGuess * contentLength
		if g < initialBodyBuffer {
			g = initialBodyBuffer
		}
		return min(g, max+1)
	}
	var src io.Reader = body
	var initial, state int64
	switch contentEncoding {
	case "", "identity":
		if contentLength > max {
			return nil, http.StatusRequestEntityTooLarge, fmt.Errorf("body over %d MiB", max>>20)
		}
		initial = initialBodyBuffer
		if contentLength >= 0 {
			initial = contentLength + 1 // +1 to see the end without growing
		}
		if err := c.admit(initial); err != nil {
			return fail(err)
		}
	case "gzip":
		initial, state = guess(), gzipStateBytes+bodyReadBufBytes
		if err := c.admit(state + initial); err != nil {
			return fail(err)
		}
		zr, err := gzip.NewReader(bufio.NewReaderSize(body, bodyReadBufBytes))
		if err != nil {
			return fail(fmt.Errorf("gzip body: %w", err))
		}
		defer zr.Close()
		src = zr
	case "zstd":
		// The frame header says the window to charge (and maybe the
		// size): read it before anything is held.
		var hb [zstdMaxHeader]byte
		hn, err := io.ReadFull(body, hb[:])
		if err != nil && !errors.Is(err, io.ErrUnexpectedEOF) && !errors.Is(err, io.EOF) {
			return fail(fmt.Errorf("reading body: %w", err))
		}
		head := hb[:hn]
		window := zstdWindow(head, max)
		if window > max {
			return nil, http.StatusRequestEntityTooLarge,
				fmt.Errorf("zstd body declares a %d MiB window, over the %d MiB a body may have", window>>20, max>>20)
		}
		initial = guess()
		if size, ok := zstdContentSize(head); ok {
			if size > uint64(max) {
				return nil, http.StatusRequestEntityTooLarge,
					fmt.Errorf("zstd body declares %d MiB, over the %d MiB a body may have", size>>20, max>>20)
			}
			initial = int64(size) + 1
		}
		// The decoder allocates the window the frame declares; it is
		// charged before, and a later frame may declare no more.
		state = bodyReadBufBytes + window + zstdStateBytes
		if err := c.admit(state + initial); err != nil {
			return fail(err)
		}
		br := bufio.NewReaderSize(io.MultiReader(bytes.NewReader(head), body), bodyReadBufBytes)
		zr, err := zstd.NewReader(br, zstd.WithDecoderConcurrency(1), zstd.WithDecoderLowmem(true),
			zstd.WithDecoderMaxWindow(uint64(max64(window, zstd.MinWindowSize))),
			zstd.WithDecoderMaxMemory(uint64(max64(window, zstd.MinWindowSize))))
		if err != nil {
			return fail(fmt.Errorf("zstd body: %w", err))
		}
		defer zr.Close()
		src = zr
	default:
		return nil, http.StatusUnsupportedMediaType, fmt.Errorf("unsupported Content-Encoding %q: want gzip, zstd or none", contentEncoding)
	}
	if initial > max+1 {
		c.give(initial - (max + 1))
		initial = max + 1
	}
	buf := make([]byte, 0, initial)
	for {
		if len(buf) == cap(buf) {
			if int64(len(buf)) > max {
				return nil, http.StatusRequestEntityTooLarge, fmt.Errorf("body over %d MiB", max>>20)
			}
			// Grow by doubling; both buffers exist during the copy, so
			// the new one is charged before the old one is given back.
			next := min(2*int64(cap(buf)), max+1)
			if err := c.grow(next); err != nil {
				return fail(err)
			}
			nb := make([]byte, len(buf), next)
			copy(nb, buf)
			c.give(int64(cap(buf)))
			buf = nb
		}
		// In steps of readStep, so a body that has grown past its
		// admission gives way soon to a request waiting for room.
		n, err := src.Read(buf[len(buf):min(cap(buf), len(buf)+readStep)])
		buf = buf[:len(buf)+n]
		if err == io.EOF {
			break
		}
		if err == nil && c.preempted() {
			return fail(errOverBudget)
		}
		if err != nil {
			if int64(len(buf)) > max {
				return nil, http.StatusRequestEntityTooLarge, fmt.Errorf("body over %d MiB", max>>20)
			}
			return fail(fmt.Errorf("reading body: %w", err))
		}
	}
	if int64(len(buf)) > max {
		return nil, http.StatusRequestEntityTooLarge, fmt.Errorf("body over %d MiB", max>>20)
	}
	return buf, http.StatusOK, nil
}

func max64(a int64, b uint64) int64 { return max(a, int64(b)) }

// zstdMaxHeader is the longest zstd frame header: magic, descriptor,
// window descriptor, 4-byte dictionary id, 8-byte content size.
const zstdMaxHeader = 4 + 1 + 1 + 4 + 8

// zstdWindow returns the window the first zstd frame of a body declares
// (RFC 8878 §3.1.1.1: the window descriptor, or the content size of a
// single-segment frame). A body it cannot read a header from — not zstd, a
// skippable frame first, cut short — is charged limit, the most any frame
// of it may then use.
func zstdWindow(head []byte, limit int64) int64 {
	if len(head) < 6 || head[0] != 0x28 || head[1] != 0xb5 || head[2] != 0x2f || head[3] != 0xfd {
		return limit
	}
	fhd := head[4]
	single := fhd&0x20 != 0
	if !single {
		wd := head[5]
		log := 10 + uint(wd>>3)
		if log > 41 {
			return 1 << 42
		}
		base := int64(1) << log
		return base + base/8*int64(wd&7)
	}
	pos := 5 + []int{0, 1, 2, 4}[fhd&3] // dictionary id
	size := []int{1, 2, 4, 8}[fhd>>6]
	if len(head) < pos+size {
		return limit
	}
	var fcs uint64
	for i := range size {
		fcs |= uint64(head[pos+i]) << (8 * i)
	}
	if size == 2 {
		fcs += 256
	}
	if fcs > uint64(limit) {
		return limit + 1
	}
	return max(int64(fcs), 1<<10)
}

// zstdContentSize returns the content size the first zstd frame of a body
// declares (RFC 8878 §3.1.1.1.4, Frame_Content_Size), if it has one.
func zstdContentSize(head []byte) (uint64, bool) {
	if len(head) < 5 || head[0] != 0x28 || head[1] != 0xb5 || head[2] != 0x2f || head[3] != 0xfd {
		return 0, false
	}
	fhd := head[4]
	single := fhd&0x20 != 0
	size := []int{0, 2, 4, 8}[fhd>>6]
	if size == 0 && single {
		size = 1
	}
	if size == 0 {
		return 0, false
	}
	pos := 5 + []int{0, 1, 2, 4}[fhd&3]
	if !single {
		pos++ // the window descriptor
	}
	if len(head) < pos+size {
		return 0, false
	}
	var fcs uint64
	for i := range size {
		fcs |= uint64(head[pos+i]) << (8 * i)
	}
	if size == 2 {
		fcs += 256
	}
	return fcs, true
}

// httpError answers with a google.rpc.Status in the request's encoding, as
// OTLP/HTTP asks.
func httpError(w http.ResponseWriter, enc string, code int, msg string) {
	if enc == EncodingProto {
		w.Header().Set("Content-Type", "application/x-protobuf")
		w.WriteHeader(code)
		var b []byte
		b = protowire.AppendTag(b, 1, protowire.VarintType)
		b = protowire.AppendVarint(b, uint64(grpcCodeForHTTP(code)))
		b = protowire.AppendTag(b, 2, protowire.BytesType)
		b = protowire.AppendString(b, msg)
		_, _ = w.Write(b)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_, _ = fmt.Fprintf(w, "{\"code\":%d,\"message\":%q}", grpcCodeForHTTP(code), msg)
}

func grpcCodeForHTTP(code int) codes.Code {
	switch code {
	case http.StatusBadRequest, http.StatusRequestEntityTooLarge, http.StatusUnsupportedMediaType:
		return codes.InvalidArgument
	case http.StatusServiceUnavailable, http.StatusTooManyRequests:
		return codes.Unavailable
	case http.StatusRequestTimeout:
		return codes.DeadlineExceeded
	case http.StatusInternalServerError:
		return codes.Internal
	case http.StatusMethodNotAllowed:
		return codes.Unimplemented
	}
	return codes.Unknown
}
