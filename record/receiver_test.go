package record

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/klauspost/compress/gzip"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/plog/plogotlp"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/collector/pdata/ptrace/ptraceotlp"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
)

// testTraces builds an export request with n spans named span-<i>.
func testTraces(n int) ptraceotlp.ExportRequest {
	td := ptrace.NewTraces()
	rs := td.ResourceSpans().AppendEmpty()
	rs.Resource().Attributes().PutStr("service.name", "test")
	ss := rs.ScopeSpans().AppendEmpty()
	for i := range n {
		sp := ss.Spans().AppendEmpty()
		sp.SetName(fmt.Sprintf("span-%d", i))
		sp.SetTraceID(pcommon.TraceID{1, byte(i)})
		sp.SetSpanID(pcommon.SpanID{2, byte(i), byte(i >> 8)})
		sp.SetStartTimestamp(pcommon.Timestamp(1_000 + i))
		sp.SetEndTimestamp(pcommon.Timestamp(2_000 + i))
		sp.Attributes().PutInt("i", int64(i))
	}
	return ptraceotlp.NewExportRequestFromTraces(td)
}

// sinkRecorder collects payloads; gate, when set, holds every sink call
// until it is closed (a capture writer that has fallen behind).
type sinkRecorder struct {
	mu   sync.Mutex
	got  []OTLPPayload
	gate chan struct{}
}

func (s *sinkRecorder) sink(ctx context.Context, p OTLPPayload) error {
	if s.gate != nil {
		select {
		case <-s.gate:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	p.releaseBody() // kept here, outside the receiver's budget
	s.got = append(s.got, p)
	return nil
}

func (s *sinkRecorder) payloads() []OTLPPayload {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]OTLPPayload(nil), s.got...)
}

func startTestReceiver(t *testing.T, s *sinkRecorder) *Receiver {
	t.Helper()
	r, err := startReceiver("127.0.0.1:0", "127.0.0.1:0", s.sink)
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

func grpcConn(t *testing.T, addr string) *grpc.ClientConn {
	t.Helper()
	cc, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cc.Close() })
	return cc
}

func TestReceiverGRPC(t *testing.T) {
	s := &sinkRecorder{}
	r := startTestReceiver(t, s)
	req := testTraces(7)
	want, _ := req.MarshalProto()
	client := ptraceotlp.NewGRPCClient(grpcConn(t, r.GRPCAddr()))
	if _, err := client.Export(context.Background(), req); err != nil {
		t.Fatal(err)
	}
	// gzip on the wire: the payload stored is still the request's bytes.
	if _, err := client.Export(context.Background(), req, grpc.UseCompressor("gzip")); err != nil {
		t.Fatal(err)
	}
	logs := plogotlp.NewExportRequestFromLogs(plog.NewLogs())
	logs.Logs().ResourceLogs().AppendEmpty().ScopeLogs().AppendEmpty().LogRecords().AppendEmpty().Body().SetStr("hi")
	if _, err := plogotlp.NewGRPCClient(grpcConn(t, r.GRPCAddr())).Export(context.Background(), logs); err != nil {
		t.Fatal(err)
	}
	got := s.payloads()
	if len(got) != 3 {
		t.Fatalf("got %d payloads, want 3", len(got))
	}
	for i, p := range got[:2] {
		if !bytes.Equal(p.Payload, want) || p.Items != 7 || p.Signal != SignalTraces || p.Transport != "grpc" || p.Encoding != EncodingProto {
			t.Errorf("payload %d: %+v", i, p)
		}
	}
	if got[2].Signal != SignalLogs || got[2].Items != 1 {
		t.Errorf("logs payload: %+v", got[2])
	}
	if st := r.Stats(); st.Requests != 3 || st.Spans != 14 || st.Logs != 1 || st.Rejected != 0 {
		t.Errorf("stats %+v", st)
	}
}

func TestReceiverGRPCRejectsGarbage(t *testing.T) {
	s := &sinkRecorder{}
	r := startTestReceiver(t, s)
	cc := grpcConn(t, r.GRPCAddr())
	// A length-delimited field 1 that claims more bytes than there are.
	err := cc.Invoke(context.Background(), "/opentelemetry.proto.collector.trace.v1.TraceService/Export",
		&rawMessage{b: []byte{0x0a, 0x7f, 0x01}}, &rawMessage{}, grpc.ForceCodecV2(rawCodec{}))
	if status.Code(err) != codes.InvalidArgument {
		t.Fatalf("err = %v, want InvalidArgument", err)
	}
	if len(s.payloads()) != 0 || r.Stats().Rejected != 1 {
		t.Fatalf("garbage was stored or not counted: %d payloads, %+v", len(s.payloads()), r.Stats())
	}
}

func gzipped(b []byte) []byte {
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	zw.Write(b)
	zw.Close()
	return buf.Bytes()
}

func TestReceiverHTTP(t *testing.T) {
	req := testTraces(5)
	pb, _ := req.MarshalProto()
	js, _ := req.MarshalJSON()
	for _, tc := range []struct {
		name, path, contentType, contentEncoding string
		body                                     []byte
		wantStatus                               int
		wantStored                               []byte
		wantEncoding                             string
	}{
		{"protobuf", "/v1/traces", "application/x-protobuf", "", pb, 200, pb, EncodingProto},
		{"json", "/v1/traces", "application/json", "", js, 200, js, EncodingJSON},
		{"json with charset", "/v1/traces", "application/json; charset=utf-8", "", js, 200, js, EncodingJSON},
		{"gzip protobuf", "/v1/traces", "application/x-protobuf", "gzip", gzipped(pb), 200, pb, EncodingProto},
		{"gzip json", "/v1/traces", "application/json", "gzip", gzipped(js), 200, js, EncodingJSON},
		{"malformed protobuf", "/v1/traces", "application/x-protobuf", "", []byte{0x0a, 0x7f}, 400, nil, ""},
		{"malformed json", "/v1/traces", "application/json", "", []byte(`{"resourceSpans":[{`), 400, nil, ""},
		{"bad gzip", "/v1/traces", "application/x-protobuf", "gzip", []byte("not gzip"), 400, nil, ""},
		{"unknown media type", "/v1/traces", "text/plain", "", pb, 415, nil, ""},
		{"unknown content encoding", "/v1/traces", "application/x-protobuf", "br", pb, 415, nil, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := &sinkRecorder{}
			r := startTestReceiver(t, s)
			hr, _ := http.NewRequest(http.MethodPost, "http://"+r.HTTPAddr()+tc.path, bytes.NewReader(tc.body))
			hr.Header.Set("Content-Type", tc.contentType)
			if tc.contentEncoding != "" {
				hr.Header.Set("Content-Encoding", tc.contentEncoding)
			}
			resp, err := http.DefaultClient.Do(hr)
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != tc.wantStatus {
				t.Fatalf("status %d (%s), want %d", resp.StatusCode, body, tc.wantStatus)
			}
			got := s.payloads()
			if tc.wantStored == nil {
				if len(got) != 0 || r.Stats().Rejected != 1 {
					t.Fatalf("rejected request stored (%d) or not counted (%+v)", len(got), r.Stats())
				}
				return
			}
			if len(got) != 1 || !bytes.Equal(got[0].Payload, tc.wantStored) || got[0].Items != 5 ||
				got[0].Encoding != tc.wantEncoding || got[0].ContentEncoding != tc.contentEncoding || got[0].Transport != "http" {
				t.Fatalf("stored %+v", got)
			}
			// The response is an ExportTraceServiceResponse the client can parse.
			out := ptraceotlp.NewExportResponse()
			if tc.wantEncoding == EncodingJSON {
				err = out.UnmarshalJSON(body)
			} else {
				err = out.UnmarshalProto(body)
			}
			if err != nil {
				t.Fatalf("response %q: %v", body, err)
			}
		})
	}
	t.Run("GET is not allowed", func(t *testing.T) {
		r := startTestReceiver(t, &sinkRecorder{})
		resp, err := http.Get("http://" + r.HTTPAddr() + "/v1/traces")
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusMethodNotAllowed {
			t.Fatalf("status %d", resp.StatusCode)
		}
	})
}

// When the capture cannot keep up, exports wait (the client sees a slow
// server) instead of being dropped; once the writer catches up, every one of
// them is stored.
func TestReceiverBackPressure(t *testing.T) {
	s := &sinkRecorder{gate: make(chan struct{})}
	r := startTestReceiver(t, s)
	client := ptraceotlp.NewGRPCClient(grpcConn(t, r.GRPCAddr()))
	const n = 8
	done := make(chan error, n)
	for range n {
		go func() {
			_, err := client.Export(context.Background(), testTraces(3))
			done <- err
		}()
	}
	// All n requests reach the sink and wait there.
	deadline := time.Now().Add(10 * time.Second)
	for r.inflight.Load() < n {
		if time.Now().After(deadline) {
			t.Fatalf("only %d requests in flight", r.inflight.Load())
		}
		time.Sleep(time.Millisecond)
	}
	select {
	case err := <-done:
		t.Fatalf("an export returned (%v) while the capture was blocked", err)
	default:
	}
	close(s.gate)
	for range n {
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}
	if got := len(s.payloads()); got != n {
		t.Fatalf("stored %d payloads, want %d", got, n)
	}
}

func TestReceiverDrain(t *testing.T) {
	r := startTestReceiver(t, &sinkRecorder{})
	start := time.Now()
	r.Drain(30*time.Millisecond, 5*time.Second)
	if el := time.Since(start); el > 2*time.Second {
		t.Fatalf("idle receiver took %v to drain", el)
	}
	// A request in flight holds the drain until max.
	r.inflight.Add(1)
	start = time.Now()
	r.Drain(10*time.Millisecond, 100*time.Millisecond)
	if el := time.Since(start); el < 90*time.Millisecond {
		t.Fatalf("drain returned after %v with a request in flight", el)
	}
	r.inflight.Add(-1)
}

func TestCountItems(t *testing.T) {
	pb, _ := testTraces(4).MarshalProto()
	for _, tc := range []struct {
		name    string
		signal  string
		enc     string
		payload []byte
		want    int
		wantErr bool
	}{
		{"traces", SignalTraces, EncodingProto, pb, 4, false},
		{"empty request", SignalTraces, EncodingProto, nil, 0, false},
		// ResourceSpans{instrumentation_library_spans(1000){spans(2){}}}:
		// what pre-1.0 SDKs send.
		{"legacy instrumentation library", SignalTraces, EncodingProto, []byte{0x0a, 0x05, 0xc2, 0x3e, 0x02, 0x12, 0x00}, 1, false},
		{"truncated", SignalTraces, EncodingProto, pb[:len(pb)-3], 0, true},
		{"bad tag", SignalTraces, EncodingProto, []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff}, 0, true},
		{"json", SignalTraces, EncodingJSON, []byte(`{"resourceSpans":[{"scopeSpans":[{"spans":[{"name":"a"},{"name":"b"}]}]}]}`), 2, false},
		{"json not otlp", SignalTraces, EncodingJSON, []byte(`[1,2`), 0, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n, err := countItems(tc.signal, tc.enc, tc.payload)
			if (err != nil) != tc.wantErr || n != tc.want {
				t.Fatalf("countItems = %d, %v; want %d, error %v", n, err, tc.want, tc.wantErr)
			}
		})
	}
}

func insecureCreds() credentials.TransportCredentials { return insecure.NewCredentials() }
