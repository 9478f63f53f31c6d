package record

import (
	"context"
	"net"
	"testing"
	"time"

	"go.opentelemetry.io/collector/pdata/ptrace/ptraceotlp"
	"google.golang.org/grpc"
)

// The receiver stores export requests byte for byte and only walks them to
// count spans. The reference is the collector's way, which record.md §4.2
// sketched: unmarshal into pdata, marshal again, store. Both run here in the
// same process on the same requests, so the ratio is the figure to read:
//
//	go test -run '^$' -bench 'Receiver|CountItems' -benchtime 2s ./record

// pdataServer is the reference receiver: ptraceotlp's server helper.
type pdataServer struct {
	ptraceotlp.UnimplementedGRPCServer
	sink payloadSink
}

func (s *pdataServer) Export(ctx context.Context, req ptraceotlp.ExportRequest) (ptraceotlp.ExportResponse, error) {
	b, err := req.MarshalProto()
	if err != nil {
		return ptraceotlp.NewExportResponse(), err
	}
	err = s.sink(ctx, OTLPPayload{RecvMonoNs: monoNow(), RecvRealNs: realNow(), Signal: SignalTraces,
		Transport: "grpc", Encoding: EncodingProto, Items: uint32(req.Traces().SpanCount()), Payload: b})
	return ptraceotlp.NewExportResponse(), err
}

// benchSink writes into a real capture table, as Record does.
func benchSink(b *testing.B) (payloadSink, func()) {
	tw, err := newTableWriter[OTLPPayload](b.TempDir(), otlpSchema, writerConfig{})
	if err != nil {
		b.Fatal(err)
	}
	return func(ctx context.Context, p OTLPPayload) error { return tw.Send(ctx, p) }, func() { tw.Close() }
}

func BenchmarkReceiverGRPC(b *testing.B) {
	const spans = 512 // the SDK's default batch
	req := testTraces(spans)
	size, _ := req.MarshalProto()
	run := func(b *testing.B, addr string) {
		cc, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecureCreds()))
		if err != nil {
			b.Fatal(err)
		}
		defer cc.Close()
		client := ptraceotlp.NewGRPCClient(cc)
		b.SetBytes(int64(len(size)))
		b.ResetTimer()
		start := time.Now()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				if _, err := client.Export(context.Background(), req); err != nil {
					b.Error(err)
					return
				}
			}
		})
		b.ReportMetric(float64(b.N*spans)/time.Since(start).Seconds(), "spans/s")
	}
	b.Run("raw", func(b *testing.B) {
		sink, done := benchSink(b)
		defer done()
		r, err := startReceiver("127.0.0.1:0", "127.0.0.1:0", sink)
		if err != nil {
			b.Fatal(err)
		}
		defer r.Stop(context.Background())
		run(b, r.GRPCAddr())
	})
	b.Run("pdata", func(b *testing.B) {
		sink, done := benchSink(b)
		defer done()
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			b.Fatal(err)
		}
		srv := grpc.NewServer()
		ptraceotlp.RegisterGRPCServer(srv, &pdataServer{sink: sink})
		go srv.Serve(ln)
		defer srv.Stop()
		run(b, ln.Addr().String())
	})
}

func BenchmarkCountItems(b *testing.B) {
	payload, _ := testTraces(512).MarshalProto()
	b.Run("protowire", func(b *testing.B) {
		b.SetBytes(int64(len(payload)))
		for b.Loop() {
			if n, err := countItems(SignalTraces, EncodingProto, payload); err != nil || n != 512 {
				b.Fatal(n, err)
			}
		}
	})
	b.Run("pdata", func(b *testing.B) {
		b.SetBytes(int64(len(payload)))
		for b.Loop() {
			req := ptraceotlp.NewExportRequest()
			if err := req.UnmarshalProto(payload); err != nil || req.Traces().SpanCount() != 512 {
				b.Fatal(err)
			}
		}
	})
}
