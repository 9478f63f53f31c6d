package record

import (
	"context"
	"fmt"
	"io"
	"mime"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/zstd"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	_ "google.golang.org/grpc/encoding/gzip" // accept gzip-compressed gRPC exports
	"google.golang.org/grpc/mem"
	"google.golang.org/grpc/peer"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protowire"
)

// maxPayloadBytes bounds one export request (decompressed). SDK batches are
// far smaller (512 spans by default); the bound keeps a runaway client from
// exhausting memory.
const maxPayloadBytes = 64 << 20

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
	// closing is closed when Stop begins, so blocked handlers give up and the
	// client is told to retry elsewhere rather than hang.
	closing   chan struct{}
	closeOnce sync.Once
	serveWG   sync.WaitGroup

	inflight     atomic.Int64
	lastActivity atomic.Int64 // CLOCK_MONOTONIC ns of the latest request start or end

	requests, spans, rejected, metrics, logs atomic.Int64
}

// ReceiverStats are the receiver's counters: requests accepted (all
// signals), spans in accepted trace requests, requests refused as malformed,
// and accepted metrics and logs requests.
type ReceiverStats struct {
	Requests, Spans, Rejected, Metrics, Logs int64
}

// startReceiver listens on grpcAddr and httpAddr and serves until Stop.
func startReceiver(grpcAddr, httpAddr string, sink payloadSink) (*Receiver, error) {
	r := &Receiver{sink: sink, closing: make(chan struct{})}
	r.lastActivity.Store(monoNow())
	var err error
	if r.grpcLn, err = net.Listen("tcp", grpcAddr); err != nil {
		return nil, fmt.Errorf("OTLP gRPC receiver: %w", err)
	}
	if r.httpLn, err = net.Listen("tcp", httpAddr); err != nil {
		r.grpcLn.Close()
		return nil, fmt.Errorf("OTLP HTTP receiver: %w", err)
	}
	r.grpcSrv = grpc.NewServer(
		grpc.ForceServerCodecV2(rawCodec{}),
		grpc.MaxRecvMsgSize(maxPayloadBytes),
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
	r.httpSrv = &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
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
	return ReceiverStats{
		Requests: r.requests.Load(), Spans: r.spans.Load(), Rejected: r.rejected.Load(),
		Metrics: r.metrics.Load(), Logs: r.logs.Load(),
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
		var in rawMessage
		if err := dec(&in); err != nil {
			r.rejected.Add(1)
			return nil, err
		}
		p := OTLPPayload{
			RecvMonoNs: monoNow(), RecvRealNs: realNow(),
			Signal: signal, Transport: "grpc", Encoding: EncodingProto, Payload: in.b,
		}
		if pr, ok := peer.FromContext(ctx); ok && pr.Addr != nil {
			p.Peer = pr.Addr.String()
		}
		n, err := countItems(signal, EncodingProto, in.b)
		if err != nil {
			r.rejected.Add(1)
			return nil, status.Error(codes.InvalidArgument, err.Error())
		}
		p.Items = uint32(n)
		if err := r.accept(ctx, p); err != nil {
			// Unavailable is retryable: an SDK will try again rather than
			// drop the batch.
			return nil, status.Error(codes.Unavailable, "llmprof record is shutting down: "+err.Error())
		}
		return &rawMessage{}, nil
	}
}

func (r *Receiver) httpHandler(signal string) http.HandlerFunc {
	return func(w http.ResponseWriter, req *http.Request) {
		defer r.begin()()
		if req.Method != http.MethodPost {
			w.Header().Set("Allow", http.MethodPost)
			httpError(w, EncodingJSON, http.StatusMethodNotAllowed, "OTLP/HTTP takes POST")
			return
		}
		enc, ok := payloadEncoding(req.Header.Get("Content-Type"))
		if !ok {
			r.rejected.Add(1)
			httpError(w, EncodingJSON, http.StatusUnsupportedMediaType,
				fmt.Sprintf("unsupported Content-Type %q: want application/x-protobuf or application/json", req.Header.Get("Content-Type")))
			return
		}
		contentEncoding := strings.ToLower(strings.TrimSpace(req.Header.Get("Content-Encoding")))
		body, status, err := readBody(req.Body, contentEncoding)
		if err != nil {
			r.rejected.Add(1)
			httpError(w, enc, status, err.Error())
			return
		}
		n, err := countItems(signal, enc, body)
		if err != nil {
			r.rejected.Add(1)
			httpError(w, enc, http.StatusBadRequest, err.Error())
			return
		}
		if contentEncoding == "identity" {
			contentEncoding = ""
		}
		p := OTLPPayload{
			RecvMonoNs: monoNow(), RecvRealNs: realNow(),
			Signal: signal, Transport: "http", Encoding: enc, ContentEncoding: contentEncoding,
			Peer: req.RemoteAddr, Items: uint32(n), Payload: body,
		}
		if err := r.accept(req.Context(), p); err != nil {
			w.Header().Set("Retry-After", "1")
			httpError(w, enc, http.StatusServiceUnavailable, "llmprof record is shutting down: "+err.Error())
			return
		}
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

// readBody reads a request body, undoing its Content-Encoding, up to
// maxPayloadBytes decompressed. It returns the HTTP status for a failure.
func readBody(body io.Reader, contentEncoding string) ([]byte, int, error) {
	src := io.LimitReader(body, maxPayloadBytes+1)
	switch contentEncoding {
	case "", "identity":
	case "gzip":
		zr, err := gzip.NewReader(src)
		if err != nil {
			return nil, http.StatusBadRequest, fmt.Errorf("gzip body: %w", err)
		}
		defer zr.Close()
		src = zr
	case "zstd":
		zr, err := zstd.NewReader(src, zstd.WithDecoderConcurrency(1))
		if err != nil {
			return nil, http.StatusBadRequest, fmt.Errorf("zstd body: %w", err)
		}
		defer zr.Close()
		src = zr
	default:
		return nil, http.StatusUnsupportedMediaType, fmt.Errorf("unsupported Content-Encoding %q: want gzip, zstd or none", contentEncoding)
	}
	b, err := io.ReadAll(io.LimitReader(src, maxPayloadBytes+1))
	if err != nil {
		return nil, http.StatusBadRequest, fmt.Errorf("reading body: %w", err)
	}
	if len(b) > maxPayloadBytes {
		return nil, http.StatusRequestEntityTooLarge, fmt.Errorf("body over %d MiB", maxPayloadBytes>>20)
	}
	return b, http.StatusOK, nil
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
	case http.StatusServiceUnavailable:
		return codes.Unavailable
	case http.StatusMethodNotAllowed:
		return codes.Unimplemented
	}
	return codes.Unknown
}
