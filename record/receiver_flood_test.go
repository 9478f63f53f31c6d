package record

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.opentelemetry.io/collector/pdata/ptrace/ptraceotlp"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
)

// floodConfig is one bomb flood beside well-behaved exporters.
type floodConfig struct {
	lim receiverLimits
	// Bomb clients, each with its own connections, keeping inflight bombs
	// in flight until the exporters are done.
	zstdClients, gzipClients, grpcClients, inflight int
	bombBytes, zstdWindow                           int
	// Exporters: the OTel Go SDK's (telemetrygen's) OTLP exporters, each
	// sending batches of spans one after another, retrying as configured.
	httpExporters, httpGzipExporters, grpcExporters int
	batches, spansPerBatch                          int
	retry                                           otlptracehttp.RetryConfig
}

type floodResult struct {
	sent, kept  map[string]int // spans per exporter: acknowledged, received
	bombCodes   map[string]int
	bombs       int64
	elapsed     time.Duration
	budgetPeak  int64
	throttled   int64
	exportFails map[string]int
}

// spanCounter is a sink that counts spans per service.name.
type spanCounter struct {
	mu   sync.Mutex
	kept map[string]int
}

func (s *spanCounter) sink(_ context.Context, p OTLPPayload) error {
	defer p.releaseBody()
	if p.Signal != SignalTraces {
		return nil
	}
	req := ptraceotlp.NewExportRequest()
	var err error
	if p.Encoding == EncodingJSON {
		err = req.UnmarshalJSON(p.Payload)
	} else {
		err = req.UnmarshalProto(p.Payload)
	}
	if err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	rss := req.Traces().ResourceSpans()
	for i := range rss.Len() {
		name, _ := rss.At(i).Resource().Attributes().Get("service.name")
		for j := range rss.At(i).ScopeSpans().Len() {
			s.kept[name.Str()] += rss.At(i).ScopeSpans().At(j).Spans().Len()
		}
	}
	return nil
}

func stubSpans(service string, batch, n int) []sdktrace.ReadOnlySpan {
	res := resource.NewSchemaless(attribute.String("service.name", service))
	now := time.Now()
	stubs := make(tracetest.SpanStubs, n)
	for i := range stubs {
		stubs[i] = tracetest.SpanStub{
			Name: fmt.Sprintf("op-%d", i),
			SpanContext: trace.NewSpanContext(trace.SpanContextConfig{
				TraceID: trace.TraceID{1, byte(batch), byte(batch >> 8), byte(i)},
				SpanID:  trace.SpanID{2, byte(i), byte(i >> 8), byte(batch)},
			}),
			StartTime:  now,
			EndTime:    now.Add(time.Millisecond),
			Attributes: []attribute.KeyValue{attribute.Int("i", i), attribute.String("k", strings.Repeat("v", 40))},
			Resource:   res,
		}
	}
	return stubs.Snapshots()
}

func runFlood(t *testing.T, cfg floodConfig) floodResult {
	t.Helper()
	counter := &spanCounter{kept: map[string]int{}}
	r := startLimitedReceiver(t, cfg.lim, counter.sink)
	res := floodResult{sent: map[string]int{}, bombCodes: map[string]int{}, exportFails: map[string]int{}}
	var mu sync.Mutex
	note := func(kind string, code any) {
		mu.Lock()
		res.bombCodes[fmt.Sprintf("%s %v", kind, code)]++
		mu.Unlock()
	}

	stop := make(chan struct{})
	var bombs sync.WaitGroup
	var bombCount atomic.Int64
	httpBomb := func(kind, encoding string, body []byte) {
		tr := &http.Transport{MaxIdleConnsPerHost: cfg.inflight, DisableCompression: true}
		defer tr.CloseIdleConnections()
		client := &http.Client{Transport: tr}
		for range cfg.inflight {
			bombs.Go(func() {
				for {
					select {
					case <-stop:
						return
					default:
					}
					req, _ := http.NewRequest(http.MethodPost, "http://"+r.HTTPAddr()+"/v1/traces", bytes.NewReader(body))
					req.Header.Set("Content-Type", "application/x-protobuf")
					req.Header.Set("Content-Encoding", encoding)
					resp, err := client.Do(req)
					bombCount.Add(1)
					if err != nil {
						note(kind, "error")
						continue
					}
					io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
					note(kind, resp.StatusCode)
				}
			})
		}
	}
	var zb, gb []byte
	if cfg.zstdClients > 0 {
		zb = zstdBomb(t, cfg.bombBytes, cfg.zstdWindow)
	}
	if cfg.gzipClients > 0 {
		gb = gzipBomb(t, cfg.bombBytes)
	}
	for range cfg.zstdClients {
		httpBomb("zstd", "zstd", zb)
	}
	for range cfg.gzipClients {
		httpBomb("gzip", "gzip", gb)
	}
	// gRPC bombs: zeros, gzip-compressed by grpc-go, twice the message
	// limit once decompressed, streams multiplexed on one connection.
	grpcBody := make([]byte, 2*cfg.lim.maxGRPCMessage)
	for range cfg.grpcClients {
		cc, err := grpc.NewClient(r.GRPCAddr(), grpc.WithTransportCredentials(insecure.NewCredentials()),
			grpc.WithDefaultCallOptions(grpc.ForceCodecV2(rawCodec{}), grpc.UseCompressor("gzip"),
				grpc.MaxCallSendMsgSize(len(grpcBody)+1)))
		if err != nil {
			t.Fatal(err)
		}
		defer cc.Close()
		for range cfg.inflight {
			bombs.Go(func() {
				for {
					select {
					case <-stop:
						return
					default:
					}
					ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
					err := cc.Invoke(ctx, "/opentelemetry.proto.collector.trace.v1.TraceService/Export",
						&rawMessage{b: grpcBody}, &rawMessage{})
					cancel()
					bombCount.Add(1)
					note("grpc", status.Code(err))
				}
			})
		}
	}
	// Let the flood take hold before the exporters start.
	time.Sleep(200 * time.Millisecond)

	start := time.Now()
	var exporters sync.WaitGroup
	export := func(name string, exp sdktrace.SpanExporter) {
		exporters.Go(func() {
			defer exp.Shutdown(context.Background())
			for b := range cfg.batches {
				spans := stubSpans(name, b, cfg.spansPerBatch)
				if err := exp.ExportSpans(context.Background(), spans); err != nil {
					mu.Lock()
					res.exportFails[name]++
					mu.Unlock()
					continue
				}
				mu.Lock()
				res.sent[name] += len(spans)
				mu.Unlock()
			}
		})
	}
	ctx := context.Background()
	httpOpts := func(gz bool) []otlptracehttp.Option {
		o := []otlptracehttp.Option{otlptracehttp.WithEndpoint(r.HTTPAddr()), otlptracehttp.WithInsecure(),
			otlptracehttp.WithRetry(cfg.retry)}
		if gz {
			o = append(o, otlptracehttp.WithCompression(otlptracehttp.GzipCompression))
		}
		return o
	}
	for i := range cfg.httpExporters + cfg.httpGzipExporters {
		gz := i >= cfg.httpExporters
		exp, err := otlptracehttp.New(ctx, httpOpts(gz)...)
		if err != nil {
			t.Fatal(err)
		}
		export(fmt.Sprintf("http-%d-gzip=%v", i, gz), exp)
	}
	for i := range cfg.grpcExporters {
		exp, err := otlptracegrpc.New(ctx, otlptracegrpc.WithEndpoint(r.GRPCAddr()), otlptracegrpc.WithInsecure(),
			otlptracegrpc.WithRetry(otlptracegrpc.RetryConfig(cfg.retry)))
		if err != nil {
			t.Fatal(err)
		}
		export(fmt.Sprintf("grpc-%d", i), exp)
	}
	exporters.Wait()
	res.elapsed = time.Since(start)
	close(stop)
	bombs.Wait()
	res.bombs = bombCount.Load()
	st := r.Stats()
	res.budgetPeak, res.throttled = st.PeakBodyBytes, st.Throttled
	counter.mu.Lock()
	res.kept = counter.kept
	counter.mu.Unlock()
	// A bomb whose client gave up (DeadlineExceeded) may still be in its
	// handler, which gives its charge back when it returns.
	waitUncharged(t, r, "the flood")
	return res
}

// checkFlood asserts that every exporter kept at least 99% of its spans
// and no bomb was accepted.
func checkFlood(t *testing.T, cfg floodConfig, res floodResult) {
	t.Helper()
	want := cfg.batches * cfg.spansPerBatch
	var names []string
	for n := range res.sent {
		names = append(names, n)
	}
	for n := range res.exportFails {
		if _, ok := res.sent[n]; !ok {
			names = append(names, n)
		}
	}
	sort.Strings(names)
	total, keptTotal := 0, 0
	for _, n := range names {
		total += want
		keptTotal += res.kept[n]
		t.Logf("%s: %d of %d spans kept (%d batches failed after retries)", n, res.kept[n], want, res.exportFails[n])
		if res.kept[n] < want*99/100 {
			t.Errorf("%s kept %d of %d spans (%.1f%%), under 99%%", n, res.kept[n], want, 100*float64(res.kept[n])/float64(want))
		}
	}
	if got := len(names); got != cfg.httpExporters+cfg.httpGzipExporters+cfg.grpcExporters {
		t.Errorf("%d exporters reported, want %d", got, cfg.httpExporters+cfg.httpGzipExporters+cfg.grpcExporters)
	}
	t.Logf("exporters: %d of %d spans kept (%.2f%%) in %v beside %d bombs; bomb answers %v; budget peak %d MiB of %d; throttled %d",
		keptTotal, total, 100*float64(keptTotal)/float64(max(total, 1)), res.elapsed.Round(time.Millisecond), res.bombs,
		res.bombCodes, res.budgetPeak>>20, cfg.lim.budget>>20, res.throttled)
	for k, v := range res.bombCodes {
		if strings.HasSuffix(k, " 200") || strings.HasSuffix(k, " OK") {
			t.Errorf("%d bombs accepted (%s)", v, k)
		}
	}
	if res.budgetPeak > cfg.lim.budget {
		t.Errorf("budget peak %d over the limit %d", res.budgetPeak, cfg.lim.budget)
	}
	if res.bombs < int64(cfg.inflight) {
		t.Errorf("only %d bombs sent: the flood did not happen", res.bombs)
	}
}

// A flood of zstd and gzip decompression bombs from several clients (HTTP,
// each bomb on its own connection, and gRPC, streams multiplexed) beside
// well-behaved exporters — the OTel Go SDK's OTLP exporters that
// telemetrygen uses, over HTTP, HTTP with gzip and gRPC, retrying on 429,
// 503 and UNAVAILABLE after Retry-After / RetryInfo: the exporters keep
// ≥ 99% of their spans. Scaled down (a 32 MiB budget, 8 MiB bodies) to run
// in seconds; TestReceiverFloodLong runs the flood at the defaults.
func TestReceiverFairUnderFlood(t *testing.T) {
	lim := defaultReceiverLimits
	lim.budget, lim.maxPayload, lim.maxGRPCMessage = 32<<20, 8<<20, 2<<20
	cfg := floodConfig{
		lim:         lim,
		zstdClients: 3, gzipClients: 2, grpcClients: 1, inflight: 4,
		bombBytes: 16 << 20, zstdWindow: 4 << 20,
		httpExporters: 2, httpGzipExporters: 1, grpcExporters: 2,
		batches: 15, spansPerBatch: 100,
		// The SDK's retry, faster: the receiver's Retry-After (1 s) is
		// still honoured as the least wait.
		retry: otlptracehttp.RetryConfig{Enabled: true, InitialInterval: 100 * time.Millisecond,
			MaxInterval: time.Second, MaxElapsedTime: 30 * time.Second},
	}
	checkFlood(t, cfg, runFlood(t, cfg))
}

// The flood at the default limits: eight clients each keeping
// eight 60 MiB zstd bombs in flight, gzip and gRPC bombs beside them, and
// 20,000 spans from exporters with the SDK's default retry (5 s initial,
// 30 s max, 1 min elapsed). Minutes of CPU: LLMPROF_LONG=1.
func TestReceiverFloodLong(t *testing.T) {
	if os.Getenv("LLMPROF_LONG") == "" {
		t.Skip("LLMPROF_LONG=1 runs the full-size bomb flood (a few minutes of CPU)")
	}
	cfg := floodConfig{
		lim:         defaultReceiverLimits,
		zstdClients: 8, gzipClients: 2, grpcClients: 2, inflight: 8,
		bombBytes: 60 << 20, zstdWindow: 8 << 20,
		httpExporters: 2, httpGzipExporters: 1, grpcExporters: 1,
		batches: 50, spansPerBatch: 100,
		retry: otlptracehttp.RetryConfig{Enabled: true, InitialInterval: 5 * time.Second,
			MaxInterval: 30 * time.Second, MaxElapsedTime: time.Minute},
	}
	checkFlood(t, cfg, runFlood(t, cfg))
}

// Half-sent bodies — more than the request slots — do not stop others:
// they hold no slot while their body is on its way, each ends with 408
// once it has paused for bodyStall (not the whole body's timeout), a gRPC
// message that never comes gives its room back after bodyStall too, and an
// export sent meanwhile is served at once.
func TestReceiverHalfSentBodies(t *testing.T) {
	lim := defaultReceiverLimits
	lim.bodyStall = 300 * time.Millisecond
	r := startLimitedReceiver(t, lim, (&sinkRecorder{}).sink)
	n := lim.maxStreams + 6
	conns := make([]net.Conn, n)
	for i := range conns {
		c, err := net.Dial("tcp", r.HTTPAddr())
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		fmt.Fprintf(c, "POST /v1/traces HTTP/1.1\r\nHost: x\r\nContent-Type: application/x-protobuf\r\nContent-Length: 1000000\r\n\r\n0123456789")
		conns[i] = c
	}
	cc := grpcConn(t, r.GRPCAddr())
	stream, err := cc.NewStream(context.Background(), &grpc.StreamDesc{ServerStreams: true, ClientStreams: true},
		"/opentelemetry.proto.collector.trace.v1.TraceService/Export")
	if err != nil {
		t.Fatal(err)
	}
	grpcDone := make(chan error, 1)
	start := time.Now()
	go func() { grpcDone <- stream.RecvMsg(new(ptraceotlp.ExportResponse)) }()
	// Wait until every body is being read (its room held), then export.
	deadline := time.Now().Add(5 * time.Second)
	for r.inflight.Load() < int64(n) && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	if got := r.inflight.Load(); got < int64(n) {
		t.Fatalf("only %d of %d half-sent requests in flight", got, n)
	}
	pb, _ := testTraces(5).MarshalProto()
	resp, err := http.Post("http://"+r.HTTPAddr()+"/v1/traces", "application/x-protobuf", bytes.NewReader(pb))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Errorf("an export beside %d half-sent bodies: status %d", n, resp.StatusCode)
	}
	var slowest time.Duration
	for i, c := range conns {
		c.SetReadDeadline(time.Now().Add(10 * time.Second))
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil {
			t.Fatalf("half-sent body %d: no answer after %v: %v", i, time.Since(start), err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusRequestTimeout {
			t.Errorf("half-sent body %d: status %d, want 408", i, resp.StatusCode)
		}
		slowest = max(slowest, time.Since(start))
	}
	err = <-grpcDone
	grpcAfter := time.Since(start)
	if status.Code(err) != codes.DeadlineExceeded {
		t.Errorf("a gRPC message that never came: %v, want DEADLINE_EXCEEDED", err)
	}
	t.Logf("%d half-sent bodies answered 408 within %v, the gRPC stream ended after %v (bodyStall %v; body timeout %v, export timeout %v)",
		n, slowest.Round(time.Millisecond), grpcAfter.Round(time.Millisecond), lim.bodyStall, lim.bodyTimeout, lim.exportTimeout)
	// Generous for a loaded machine, yet far under the 10 s body and
	// 60 s export timeouts the stall cuts short.
	if slowest > 5*time.Second || grpcAfter > 5*time.Second {
		t.Errorf("half-sent requests held for %v (HTTP) and %v (gRPC)", slowest, grpcAfter)
	}
	waitUncharged(t, r, "every half-sent request ended")
}

// waitUncharged fails t unless r's body budget is back to nothing within
// 5 s after what ended: requests that ended for their clients may still be
// in their handlers, which give their charges back as they return; a
// charge that is never given back stays.
func waitUncharged(t *testing.T, r *Receiver, after string) {
	t.Helper()
	waitUntil := time.Now().Add(5 * time.Second)
	for {
		used, _ := r.budget.usage()
		if used == 0 {
			return
		}
		if time.Now().After(waitUntil) {
			t.Fatalf("%d bytes still charged after %s", used, after)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// The budget's rules, one by one: growth never waits (two requests holding
// halves fail at once instead of waiting on each other), growth yields to a
// request waiting for room, waiters are let in in order (a small one does
// not pass a large one), and a connection past its share waits while
// another connection's request is let in.
func TestMemBudgetFairness(t *testing.T) {
	ctx := context.Background()
	b := newMemBudget(100) // share 25
	a1 := &charge{b: b, key: "a", ctx: ctx, wait: time.Second}
	b1 := &charge{b: b, key: "b", ctx: ctx, wait: time.Second}
	if err := a1.admit(50); err != nil {
		t.Fatal(err)
	}
	if err := b1.admit(50); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if err := a1.grow(10); err != errOverBudget {
		t.Fatalf("grow past the budget: %v", err)
	}
	if d := time.Since(start); d > 100*time.Millisecond {
		t.Fatalf("a refused grow took %v: it waited", d)
	}
	b1.release()

	// A waiter for room (c, 60 of the 50 free) blocks growth and later
	// arrivals (d, 10) until it is let in.
	c1 := &charge{b: b, key: "c", ctx: ctx, wait: 5 * time.Second}
	cDone := make(chan error, 1)
	go func() { cDone <- c1.admit(60) }()
	waitQueue(t, b, 1)
	if err := a1.grow(10); err != errOverBudget {
		t.Fatalf("grow with a request waiting for room: %v", err)
	}
	d1 := &charge{b: b, key: "d", ctx: ctx, wait: 5 * time.Second}
	dDone := make(chan error, 1)
	go func() { dDone <- d1.admit(10) }()
	waitQueue(t, b, 2)
	select {
	case err := <-dDone:
		t.Fatalf("a later, smaller request passed the one waiting first: %v", err)
	case <-time.After(50 * time.Millisecond):
	}
	a1.release()
	if err := <-cDone; err != nil {
		t.Fatal(err)
	}
	if err := <-dDone; err != nil {
		t.Fatal(err)
	}
	c1.release()
	d1.release()

	// Shares: e's first request may exceed the share (25) alone; its
	// second waits while f is let in, and comes in when the first ends.
	e1 := &charge{b: b, key: "e", ctx: ctx, wait: time.Second}
	if err := e1.admit(40); err != nil {
		t.Fatal(err)
	}
	if err := e1.grow(10); err != nil {
		t.Fatalf("a connection's only request growing past the share: %v", err)
	}
	e2 := &charge{b: b, key: "e", ctx: ctx, wait: 5 * time.Second}
	e2Done := make(chan error, 1)
	go func() { e2Done <- e2.admit(10) }()
	waitQueue(t, b, 1)
	f1 := &charge{b: b, key: "f", ctx: ctx, wait: time.Second}
	if err := f1.admit(10); err != nil {
		t.Fatalf("another connection's request behind one held by its share: %v", err)
	}
	if err := f1.grow(5); err != nil {
		t.Fatalf("growth held back by a waiter that waits for its own share: %v", err)
	}
	e1.release()
	if err := <-e2Done; err != nil {
		t.Fatal(err)
	}
	e2.release()
	f1.release()
	// A wait that ends unserved leaves nothing behind.
	g1 := &charge{b: b, key: "g", ctx: ctx, wait: 10 * time.Millisecond}
	if err := g1.admit(101); err != errOverBudget {
		t.Fatalf("more than the budget: %v", err)
	}
	h := &charge{b: b, key: "h", ctx: ctx, wait: time.Second}
	h.admit(95)
	if err := g1.admit(10); err != errOverBudget {
		t.Fatalf("a wait past its time: %v", err)
	}
	h.release()
	if used, _ := b.usage(); used != 0 || len(b.queue) != 0 || len(b.conns) != 0 {
		t.Fatalf("left: %d bytes, %d waiters, %d connections", used, len(b.queue), len(b.conns))
	}
}

func waitQueue(t *testing.T, b *memBudget, n int) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		b.mu.Lock()
		got := len(b.queue)
		b.mu.Unlock()
		if got >= n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d waiters, want %d", got, n)
		}
		time.Sleep(time.Millisecond)
	}
}
