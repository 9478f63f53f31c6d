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
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/zstd"
	"go.opentelemetry.io/collector/pdata/ptrace/ptraceotlp"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

func startLimitedReceiver(t *testing.T, lim receiverLimits, sink payloadSink) *Receiver {
	t.Helper()
	r, err := startReceiverLimits("127.0.0.1:0", "127.0.0.1:0", lim, sink)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		r.Stop(ctx)
	})
	return r
}

// zstdBomb compresses n zero bytes with the given encoder window: a few KB
// that declare a window of that size and decompress to n bytes.
func zstdBomb(t testing.TB, n int, window int) []byte {
	t.Helper()
	var b bytes.Buffer
	zw, err := zstd.NewWriter(&b, zstd.WithWindowSize(window), zstd.WithEncoderConcurrency(1))
	if err != nil {
		t.Fatal(err)
	}
	chunk := make([]byte, 1<<20)
	for written := 0; written < n; written += len(chunk) {
		zw.Write(chunk)
	}
	zw.Close()
	return b.Bytes()
}

// gzipBomb is n zero bytes gzipped: about 1000:1 at the default level
// (103 KB for 100 MiB), within 2% of the best level's ratio in a tenth of
// its time.
func gzipBomb(t testing.TB, n int) []byte {
	t.Helper()
	var b bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&b, gzip.DefaultCompression)
	chunk := make([]byte, 1<<20)
	for written := 0; written < n; written += len(chunk) {
		zw.Write(chunk)
	}
	zw.Close()
	return b.Bytes()
}

// heapPeak samples the live heap — what the last collection found
// reachable, not garbage waiting for the next one — until stop is called,
// and returns the highest value seen.
func heapPeak() (stop func() uint64) {
	var peak atomic.Uint64
	done := make(chan struct{})
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		sample := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
		for {
			metrics.Read(sample)
			if v := sample[0].Value.Uint64(); v > peak.Load() {
				peak.Store(v)
			}
			select {
			case <-done:
				return
			case <-time.After(time.Millisecond):
			}
		}
	}()
	return func() uint64 { close(done); <-finished; return peak.Load() }
}

// Decompression bombs, 16 at a time, of each kind: the receiver's memory
// stays within its budget (the heap, measured, within budget plus the test's
// own overhead), and requests beyond it are told to retry (429 with
// Retry-After) or refused as too large, never served by allocating more.
// The plain run scales the default limits, the bombs and the slack down by
// 4 (a 64 MiB budget, 16 MiB bodies, 25 MiB bombs: 1.5 s of CPU against
// 6 s, most of it page faults); LLMPROF_LONG=1 runs them at full size.
func TestReceiverBombsStayInBudget(t *testing.T) {
	if testing.Short() {
		t.Skip("allocates and decompresses a few GB")
	}
	scale := int64(4)
	if os.Getenv("LLMPROF_LONG") != "" {
		scale = 1
	}
	lim := defaultReceiverLimits
	lim.budget /= scale
	lim.maxPayload /= scale
	lim.budgetWait = 200 * time.Millisecond // refuse sooner: the test is about memory
	r := startLimitedReceiver(t, lim, (&sinkRecorder{}).sink)
	size := int((100 << 20) / scale)
	window := func(w int64) int { return int(w / scale) }
	bombs := []struct {
		name, encoding string
		body           []byte
	}{
		// 7 KB that declare a 512 MiB window (the bomb, at full
		// size; 128 MiB at a quarter): refused from the header, nothing
		// allocated.
		{"zstd, window 8× the largest body", "zstd", zstdBomb(t, size, window(512<<20))},
		// A window the size of the largest body, allowed and charged: a
		// few at a time.
		{"zstd, window of the largest body", "zstd", zstdBomb(t, size, window(64<<20))},
		// A window an eighth of that expanding to 1.56× the largest body:
		// cut there.
		{"zstd, small window", "zstd", zstdBomb(t, size, window(8<<20))},
		{"gzip", "gzip", gzipBomb(t, size)},
	}
	// Let the GC chase the heap down to the budget: memory held beyond it
	// (not garbage waiting for a collection) then shows up as a peak over it.
	// The slack is the test's own memory: the part that scales with the
	// bodies and a part that does not (16 clients' and handlers' buffers,
	// the decompressors' tables): at a quarter, 96 MiB / 4 alone left 1 MiB
	// too little once at load 5 (89 MiB over a 64 + 24 MiB bound), where a
	// window left uncharged still grows the heap by 200 MiB and more.
	slack := uint64(12<<20) + uint64(84<<20)/uint64(scale)
	defer debug.SetMemoryLimit(debug.SetMemoryLimit(lim.budget + int64(slack)))
	runtime.GC()
	base := liveHeap()
	for _, b := range bombs {
		t.Run(b.name, func(t *testing.T) {
			stop := heapPeak()
			codes := map[int]int{}
			var mu sync.Mutex
			var wg sync.WaitGroup
			for range 16 {
				wg.Go(func() {
					req, _ := http.NewRequest(http.MethodPost, "http://"+r.HTTPAddr()+"/v1/traces", bytes.NewReader(b.body))
					req.Header.Set("Content-Type", "application/x-protobuf")
					req.Header.Set("Content-Encoding", b.encoding)
					resp, err := http.DefaultClient.Do(req)
					if err != nil {
						t.Error(err)
						return
					}
					io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
					if resp.StatusCode == http.StatusTooManyRequests && resp.Header.Get("Retry-After") == "" {
						t.Error("429 without Retry-After")
					}
					mu.Lock()
					codes[resp.StatusCode]++
					mu.Unlock()
				})
			}
			wg.Wait()
			peak := stop()
			_, budgetPeak := r.budget.usage()
			t.Logf("%d B each: responses %v; live heap peak %d MiB over a %d MiB base; budget peak %d MiB of %d",
				len(b.body), codes, (int64(peak)-int64(base))>>20, base>>20, budgetPeak>>20, lim.budget>>20)
			if codes[http.StatusOK] > 0 {
				t.Errorf("a bomb was accepted: %v", codes)
			}
			if budgetPeak > lim.budget {
				t.Errorf("budget peak %d over the limit %d", budgetPeak, lim.budget)
			}
			if over := int64(peak) - int64(base); over > lim.budget+int64(slack) {
				t.Errorf("heap grew %d MiB, over the %d MiB budget plus %d MiB", over>>20, lim.budget>>20, slack>>20)
			}
		})
	}
	if used, _ := r.budget.usage(); used != 0 {
		t.Fatalf("%d bytes still charged after every request ended", used)
	}
}

// Bodies that fit are served while the budget has room; one that does not
// fit waits for room, then is told to retry: HTTP 429 + Retry-After, gRPC
// UNAVAILABLE + RetryInfo, as the OTLP spec defines back-pressure.
func TestReceiverThrottles(t *testing.T) {
	gate := make(chan struct{})
	var gated sync.Once
	s := &sinkRecorder{gate: gate}
	lim := defaultReceiverLimits
	lim.maxStreams, lim.budgetWait = 2, 50*time.Millisecond
	r := startLimitedReceiver(t, lim, s.sink)
	defer gated.Do(func() { close(gate) })
	pb, _ := testTraces(3).MarshalProto()
	post := func() (*http.Response, error) {
		req, _ := http.NewRequest(http.MethodPost, "http://"+r.HTTPAddr()+"/v1/traces", bytes.NewReader(pb))
		req.Header.Set("Content-Type", "application/x-protobuf")
		return http.DefaultClient.Do(req)
	}
	// Two exports wait in the (blocked) capture: the stream limit is full.
	errs := make(chan error, 2)
	for range 2 {
		go func() {
			resp, err := post()
			if err == nil {
				resp.Body.Close()
				if resp.StatusCode != http.StatusOK {
					err = fmt.Errorf("status %d", resp.StatusCode)
				}
			}
			errs <- err
		}()
	}
	deadline := time.Now().Add(10 * time.Second)
	for r.streams.Load() < 2 {
		if time.Now().After(deadline) {
			t.Fatal("the two exports never reached the sink")
		}
		time.Sleep(time.Millisecond)
	}
	resp, err := post()
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusTooManyRequests || resp.Header.Get("Retry-After") != "1" {
		t.Fatalf("third HTTP export: %d, Retry-After %q", resp.StatusCode, resp.Header.Get("Retry-After"))
	}
	_, err = ptraceotlp.NewGRPCClient(grpcConn(t, r.GRPCAddr())).Export(context.Background(), testTraces(1))
	checkRetryInfo(t, err)
	gated.Do(func() { close(gate) })
	for range 2 {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	if st := r.Stats(); st.Throttled != 2 || st.Requests != 2 {
		t.Fatalf("stats %+v", st)
	}

	// The memory budget: a budget smaller than a gRPC reservation can
	// never be met, so the export is throttled after the wait.
	lim = defaultReceiverLimits
	lim.budget, lim.budgetWait = 1<<20, 10*time.Millisecond
	small := startLimitedReceiver(t, lim, (&sinkRecorder{}).sink)
	_, err = ptraceotlp.NewGRPCClient(grpcConn(t, small.GRPCAddr())).Export(context.Background(), testTraces(1))
	checkRetryInfo(t, err)
	big := bytes.Repeat([]byte{0}, 2<<20)
	req, _ := http.NewRequest(http.MethodPost, "http://"+small.HTTPAddr()+"/v1/traces", bytes.NewReader(big))
	req.Header.Set("Content-Type", "application/x-protobuf")
	resp, err = http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusTooManyRequests || resp.Header.Get("Retry-After") == "" {
		t.Fatalf("a body over the budget: %d, Retry-After %q", resp.StatusCode, resp.Header.Get("Retry-After"))
	}
}

func checkRetryInfo(t *testing.T, err error) {
	t.Helper()
	st := status.Convert(err)
	if st.Code() != codes.Unavailable {
		t.Fatalf("gRPC export: %v, want UNAVAILABLE", err)
	}
	for _, d := range st.Details() {
		if ri, ok := d.(*errdetails.RetryInfo); ok && ri.RetryDelay.AsDuration() == retryAfter {
			return
		}
	}
	t.Fatalf("gRPC UNAVAILABLE without RetryInfo: %v", st.Details())
}

// A body that never arrives does not hold its connection: HTTP answers 408
// once bodyTimeout passes, gRPC ends the stream at exportTimeout.
func TestReceiverTimeouts(t *testing.T) {
	lim := defaultReceiverLimits
	lim.bodyTimeout, lim.exportTimeout = 200*time.Millisecond, 300*time.Millisecond
	r := startLimitedReceiver(t, lim, (&sinkRecorder{}).sink)

	conn, err := net.Dial("tcp", r.HTTPAddr())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	fmt.Fprintf(conn, "POST /v1/traces HTTP/1.1\r\nHost: x\r\nContent-Type: application/x-protobuf\r\nContent-Length: 1000\r\n\r\n0123456789")
	conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	start := time.Now()
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatalf("no answer to a stalled body after %v: %v", time.Since(start), err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusRequestTimeout {
		t.Fatalf("stalled body: status %d", resp.StatusCode)
	}

	cc := grpcConn(t, r.GRPCAddr())
	stream, err := cc.NewStream(context.Background(), &grpc.StreamDesc{ServerStreams: true, ClientStreams: true},
		"/opentelemetry.proto.collector.trace.v1.TraceService/Export")
	if err != nil {
		t.Fatal(err)
	}
	// Headers are sent; the message never is.
	start = time.Now()
	err = stream.RecvMsg(new(ptraceotlp.ExportResponse))
	if status.Code(err) != codes.DeadlineExceeded || time.Since(start) > 5*time.Second {
		t.Fatalf("stalled gRPC export: %v after %v", err, time.Since(start))
	}
	if used, _ := r.budget.usage(); used != 0 {
		t.Fatalf("%d bytes still charged", used)
	}
}

// A capture that cannot store an export says so (a final error: retrying
// cannot help), unlike a receiver shutting down (retryable).
func TestReceiverSinkRefusals(t *testing.T) {
	for _, tc := range []struct {
		name     string
		err      error
		httpCode int
		grpcCode codes.Code
	}{
		{"disk full", fmt.Errorf("%w: otlp.arrows: no space left on device", errNotStored), http.StatusInternalServerError, codes.Internal},
		{"shutting down", errTableClosed, http.StatusServiceUnavailable, codes.Unavailable},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := startLimitedReceiver(t, defaultReceiverLimits, func(context.Context, OTLPPayload) error { return tc.err })
			pb, _ := testTraces(1).MarshalProto()
			resp, err := http.Post("http://"+r.HTTPAddr()+"/v1/traces", "application/x-protobuf", bytes.NewReader(pb))
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			_, gerr := ptraceotlp.NewGRPCClient(grpcConn(t, r.GRPCAddr())).Export(context.Background(), testTraces(1))
			if resp.StatusCode != tc.httpCode || status.Code(gerr) != tc.grpcCode {
				t.Fatalf("HTTP %d, gRPC %v", resp.StatusCode, gerr)
			}
			if used, _ := r.budget.usage(); used != 0 {
				t.Fatalf("%d bytes still charged after refused exports", used)
			}
		})
	}
}

func TestZstdWindow(t *testing.T) {
	// A streaming frame from the encoder, and the same frame declaring a
	// larger window (RFC 8878 §3.1.1.1.2: the Window_Descriptor byte after
	// the frame header descriptor, exponent in its top five bits, mantissa
	// in the low three): the encoder asked for a 512 MiB window zeroes a
	// history that large first, 1.8 s of this package's CPU for a header.
	streaming := zstdBomb(t, 2<<20, 8<<20)
	if streaming[4]&0x20 != 0 || streaming[5] != 0x68 {
		t.Fatalf("the encoder's 8 MiB frame header is %x, want no single segment and window descriptor 68", streaming[4:6])
	}
	withWindow := func(wd byte) []byte {
		b := slices.Clone(streaming)
		b[5] = wd
		return b
	}
	for _, tc := range []struct {
		name   string
		body   []byte
		window int64
	}{
		{"8 MiB streaming", streaming, 8 << 20},
		{"512 MiB streaming", withWindow(0x98), 512 << 20},
		{"704 MiB streaming", withWindow(0x9b), 704 << 20},
		{"single segment", func() []byte {
			e, _ := zstd.NewWriter(nil)
			return e.EncodeAll(make([]byte, 5000), nil)
		}(), 5000},
		{"not zstd", []byte("hello, world"), 64 << 20},
	} {
		if got := zstdWindow(tc.body, 64<<20); got != tc.window {
			t.Errorf("%s: window %d, want %d", tc.name, got, tc.window)
		}
	}
}

func liveHeap() uint64 {
	sample := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	metrics.Read(sample)
	return sample[0].Value.Uint64()
}

// A payload stays charged while it waits for the capture writer, and is
// released when the writer has copied it: the budget covers the queue.
func TestReceiverQueuedPayloadsStayCharged(t *testing.T) {
	var mu sync.Mutex
	var held []OTLPPayload
	r := startLimitedReceiver(t, defaultReceiverLimits, func(_ context.Context, p OTLPPayload) error {
		mu.Lock()
		defer mu.Unlock()
		held = append(held, p) // queued, not yet written
		return nil
	})
	pb, _ := testTraces(50).MarshalProto()
	resp, err := http.Post("http://"+r.HTTPAddr()+"/v1/traces", "application/x-protobuf", bytes.NewReader(pb))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if _, err := ptraceotlp.NewGRPCClient(grpcConn(t, r.GRPCAddr())).Export(context.Background(), testTraces(50)); err != nil {
		t.Fatal(err)
	}
	used, _ := r.budget.usage()
	if used < 2*int64(len(pb)) {
		t.Fatalf("%d bytes charged for two queued payloads of %d", used, len(pb))
	}
	mu.Lock()
	for i := range held {
		held[i].releaseBody() // what the writer does once the row is in a batch
	}
	mu.Unlock()
	if used, _ := r.budget.usage(); used != 0 {
		t.Fatalf("%d bytes still charged after the writer took both", used)
	}
}
