// Package otlpclient is a test workload for `llmprof record`: it sits where an
// inference server would, before the pipeline, and exports deterministic
// LLM-shaped spans with the OpenTelemetry Go SDK, configured only through the
// OTEL_EXPORTER_OTLP_* environment that record sets (gRPC or HTTP/protobuf,
// as OTEL_EXPORTER_OTLP_TRACES_PROTOCOL says). It writes what it sent as JSON
// Lines so a test can check that every span reached the capture intact.
// cmd/llmprof's tests run it inside their own binary (Main); the command
// cmd/otlpclient is the same program on its own:
//
//	otlpclient -spans 1000 -sent sent.jsonl        export 1000 spans and exit
//	otlpclient -until-signal -sent sent.jsonl      export until SIGINT/SIGTERM, flush, exit
package otlpclient

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"sync/atomic"
	"syscall"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	sdkresource "go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
)

// SentSpan is one span as the client sent it; tests compare it with what the
// capture holds.
type SentSpan struct {
	TraceID string            `json:"trace_id"`
	SpanID  string            `json:"span_id"`
	Parent  string            `json:"parent_span_id,omitempty"`
	Name    string            `json:"name"`
	StartNs int64             `json:"start_ns"`
	EndNs   int64             `json:"end_ns"`
	Attrs   map[string]string `json:"attrs"`
}

// Main runs the client with args (the command line after the program's
// name) and exits: 1 on an error, else the status -exit asks for.
func Main(args []string) {
	if err := run(args); err != nil {
		fmt.Fprintln(os.Stderr, "otlpclient:", err)
		os.Exit(1)
	}
	os.Exit(0)
}

func run(args []string) error {
	fs := flag.NewFlagSet("otlpclient", flag.ExitOnError)
	spans := fs.Int("spans", 100, "spans to export (ignored with -until-signal)")
	untilSignal := fs.Bool("until-signal", false, "export continuously until SIGINT or SIGTERM")
	burst := fs.Int("burst", 200, "spans per 10 ms with -until-signal")
	sentPath := fs.String("sent", "", "write the spans sent to this JSON Lines file")
	exitCode := fs.Int("exit", 0, "exit with this status after a clean shutdown")
	if err := fs.Parse(args); err != nil {
		return err
	}

	// Subscribe before exporting so that a stop request is never missed.
	stop := make(chan os.Signal, 1)
	signal.Notify(stop, syscall.SIGINT, syscall.SIGTERM)

	ctx := context.Background()
	var exportErrs atomic.Int64
	otel.SetErrorHandler(otel.ErrorHandlerFunc(func(err error) {
		exportErrs.Add(1)
		fmt.Fprintln(os.Stderr, "otlpclient: export error:", err)
	}))
	exp, err := newExporter(ctx)
	if err != nil {
		return err
	}
	res := sdkresource.NewSchemaless(
		attribute.String("service.name", "otlpclient"),
		attribute.String("host.name", "test-host"))
	// Blocking: a full queue waits instead of dropping spans, so "every span
	// sent arrives" is a property of the receiver, not of the SDK's luck.
	tp := sdktrace.NewTracerProvider(sdktrace.WithResource(res),
		sdktrace.WithSpanProcessor(sdktrace.NewBatchSpanProcessor(exp, sdktrace.WithBlocking(),
			sdktrace.WithMaxQueueSize(8192), sdktrace.WithBatchTimeout(100*time.Millisecond))))
	tracer := tp.Tracer("github.com/llmprof/llmprof/internal/otlpclient", trace.WithInstrumentationVersion("1.0.0"))

	var sent []SentSpan
	emit := func(i int) {
		sent = append(sent, emitPair(ctx, tracer, time.Now(), i)...)
	}
	if *untilSignal {
		tick := time.NewTicker(10 * time.Millisecond)
		defer tick.Stop()
		i := 0
	loop:
		for {
			select {
			case <-stop:
				break loop
			case <-tick.C:
				for range *burst / 2 {
					emit(i)
					i++
				}
			}
		}
	} else {
		for i := range (*spans + 1) / 2 {
			emit(i)
		}
		sent = sent[:*spans]
	}
	if err := tp.Shutdown(ctx); err != nil {
		return fmt.Errorf("shutdown: %w", err)
	}
	if n := exportErrs.Load(); n > 0 {
		return fmt.Errorf("%d export errors", n)
	}
	if *sentPath != "" {
		if err := writeSent(*sentPath, sent); err != nil {
			return err
		}
	}
	fmt.Fprintf(os.Stderr, "otlpclient: sent %d spans\n", len(sent))
	if *exitCode != 0 {
		os.Exit(*exitCode)
	}
	return nil
}

// newExporter builds the exporter the environment asks for, the way an
// application honouring OTEL_EXPORTER_OTLP_TRACES_PROTOCOL would; endpoint
// and insecure come from the environment inside the exporters.
func newExporter(ctx context.Context) (sdktrace.SpanExporter, error) {
	proto := os.Getenv("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL")
	if proto == "" {
		proto = os.Getenv("OTEL_EXPORTER_OTLP_PROTOCOL")
	}
	switch proto {
	case "", "grpc":
		return otlptracegrpc.New(ctx)
	case "http/protobuf":
		return otlptracehttp.New(ctx)
	}
	return nil, fmt.Errorf("unsupported OTEL_EXPORTER_OTLP_TRACES_PROTOCOL %q", proto)
}

var tenants = []string{"tenant-a", "tenant-b", "tenant-c"}

// emitPair emits request i, starting at start: an llm.request span and its
// llm.decode child, with times relative to start and attributes derived
// from i.
func emitPair(ctx context.Context, tracer trace.Tracer, start time.Time, i int) []SentSpan {
	attrs := []attribute.KeyValue{
		attribute.String("llm.request.id", fmt.Sprintf("req-%d", i)),
		attribute.String("llm.tenant", tenants[i%len(tenants)]),
		attribute.Int64("llm.input_length", int64(100+i)),
		attribute.Float64("llm.cache_hit_ratio", float64(i%10)/10),
		attribute.Bool("llm.streamed", i%2 == 0),
	}
	pctx, parent := tracer.Start(ctx, "llm.request", trace.WithTimestamp(start), trace.WithAttributes(attrs...),
		trace.WithSpanKind(trace.SpanKindServer))
	_, child := tracer.Start(pctx, "llm.decode", trace.WithTimestamp(start.Add(200*time.Microsecond)),
		trace.WithAttributes(attribute.Int64("llm.output_length", int64(i%50))))
	child.AddEvent("llm.token", trace.WithTimestamp(start.Add(300*time.Microsecond)),
		trace.WithAttributes(attribute.Int64("llm.token.index", 0)))
	childEnd := start.Add(800 * time.Microsecond)
	child.End(trace.WithTimestamp(childEnd))
	parentEnd := start.Add(900 * time.Microsecond)
	parent.End(trace.WithTimestamp(parentEnd))

	pa := map[string]string{}
	for _, a := range attrs {
		pa[string(a.Key)] = a.Value.String()
	}
	return []SentSpan{
		{TraceID: parent.SpanContext().TraceID().String(), SpanID: parent.SpanContext().SpanID().String(),
			Name: "llm.request", StartNs: start.UnixNano(), EndNs: parentEnd.UnixNano(), Attrs: pa},
		{TraceID: child.SpanContext().TraceID().String(), SpanID: child.SpanContext().SpanID().String(),
			Parent: parent.SpanContext().SpanID().String(), Name: "llm.decode",
			StartNs: start.Add(200 * time.Microsecond).UnixNano(), EndNs: childEnd.UnixNano(),
			Attrs: map[string]string{"llm.output_length": fmt.Sprint(i % 50)}},
	}
}

func writeSent(path string, sent []SentSpan) (err error) {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, f.Close()) }()
	w := bufio.NewWriter(f)
	enc := json.NewEncoder(w)
	for _, s := range sent {
		if err := enc.Encode(s); err != nil {
			return err
		}
	}
	return w.Flush()
}
