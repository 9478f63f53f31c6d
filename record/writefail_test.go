package record

import (
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"go.opentelemetry.io/collector/pdata/ptrace/ptraceotlp"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// fullDisk passes the first n bytes to w, then fails as a full disk does:
// a short write and ENOSPC.
type fullDisk struct {
	w    io.Writer
	left atomic.Int64
}

func (d *fullDisk) Write(p []byte) (int, error) {
	left := d.left.Load()
	if int64(len(p)) <= left {
		d.left.Add(-int64(len(p)))
		return d.w.Write(p)
	}
	n, _ := d.w.Write(p[:max(left, 0)])
	d.left.Store(0)
	return n, syscall.ENOSPC
}

// A table that cannot be written ends the recording: the child is stopped,
// exports are refused with an error that says why (not "shutting down"),
// the manifest is final ("failed", not "recording") and counts the spans
// that reached the disk — exactly those a reader finds — and the ones lost.
func TestRecordWriteFailure(t *testing.T) {
	rt := newRecordTest(t, "sh", "-c", "sleep 30")
	rt.opts.wrapTable = func(table string, w io.Writer) io.Writer {
		if table != TableOTLP {
			return w
		}
		d := &fullDisk{w: w}
		d.left.Store(64 << 10)
		return d
	}
	type outcome struct {
		res *Result
		err error
	}
	done := make(chan outcome, 1)
	go func() {
		res, err := Record(context.Background(), rt.opts)
		done <- outcome{res, err}
	}()
	var m *Manifest
	deadline := time.Now().Add(20 * time.Second)
	for m == nil || m.Command.Pid == 0 {
		if time.Now().After(deadline) {
			t.Fatal("the child never started")
		}
		time.Sleep(5 * time.Millisecond)
		m, _ = ReadManifest(rt.opts.Dir)
	}
	client := ptraceotlp.NewGRPCClient(grpcConn(t, m.OTLP.GRPCAddr))
	const perRequest = 512
	var acked int64
	var refusal error
	for refusal == nil {
		if time.Now().After(deadline) {
			t.Fatalf("exports still accepted after %d spans", acked)
		}
		if _, err := client.Export(context.Background(), testTraces(perRequest)); err != nil {
			refusal = err
			break
		}
		acked += perRequest
	}
	out := <-done
	if !errors.Is(out.err, ErrCaptureWrite) || !errors.Is(out.err, syscall.ENOSPC) {
		t.Fatalf("Record: %v, want ErrCaptureWrite with ENOSPC", out.err)
	}
	// A request that reaches the receiver after the write failed is told
	// why; one sent after record has already shut the receiver down (the
	// failure stops everything within milliseconds, so which one the client
	// sends first is a race) finds the port closed. Either way nothing it
	// was told stored is lost uncounted (below).
	switch st := status.Convert(refusal); st.Code() {
	case codes.Internal:
		if !strings.Contains(st.Message(), "could not store") || !strings.Contains(st.Message(), "no space left") {
			t.Errorf("the client was told %v", refusal)
		}
	case codes.Unavailable:
		if !strings.Contains(st.Message(), "connection refused") && !strings.Contains(st.Message(), "closing") {
			t.Errorf("the client was told %v", refusal)
		}
	default:
		t.Errorf("the client was told %v", refusal)
	}
	m, err := ReadManifest(rt.opts.Dir)
	if err != nil {
		t.Fatal(err)
	}
	if m.Status != StatusFailed || !strings.Contains(m.StatusDetail, "no space left") || out.res.Status != StatusFailed {
		t.Fatalf("manifest status %q (%s), result %q", m.Status, m.StatusDetail, out.res.Status)
	}
	if m.Command.Signal != "SIGINT" {
		t.Errorf("the child was not stopped by record: signal %q, exit %v", m.Command.Signal, m.Command.ExitCode)
	}
	c, _ := OpenCapture(rt.opts.Dir)
	var stored, requests int64
	res, err := ReadTable(c, func(p *OTLPPayload) error { stored += int64(p.Items); requests++; return nil })
	if err != nil {
		t.Fatal(err)
	}
	if stored == 0 || m.OTLP.Spans != stored || m.OTLP.Requests != requests || m.OTLP.Spans+m.OTLP.SpansLost != acked {
		t.Fatalf("manifest: %d spans in %d requests, %d lost; the table holds %d in %d; the client had %d acknowledged (%+v)",
			m.OTLP.Spans, m.OTLP.Requests, m.OTLP.SpansLost, stored, requests, acked, res)
	}
	if _, err := os.Stat(filepath.Join(rt.opts.Dir, manifestReserve)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the manifest's reserve is left behind: %v", err)
	}
	if !strings.Contains(rt.log.String(), "were not stored") {
		t.Errorf("the final line does not say spans were lost:\n%s", rt.log)
	}
	t.Logf("%d spans acknowledged, %d stored, %d lost; log:\n%s", acked, m.OTLP.Spans, m.OTLP.SpansLost, rt.log)
}

// A command told to export that sent nothing is a warning, at the end of
// record and in every report of the capture; one whose exports go
// elsewhere (--keep-otel-env) is not.
func TestRecordWarnsWhenNothingArrives(t *testing.T) {
	rt := newRecordTest(t, "true")
	rt.run(t)
	if !strings.Contains(rt.log.String(), "warning: no OTLP export arrived") {
		t.Errorf("log:\n%s", rt.log)
	}
	tr := decodeCapture(t, rt.opts.Dir, &CaptureDecoder{})
	if !hasWarning(tr, "capture-no-spans") {
		t.Errorf("warnings %v", tr.Warnings.List)
	}

	t.Setenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "http://collector.example:4317")
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "http://collector.example:4317")
	rt = newRecordTest(t, "true")
	rt.opts.KeepOTELEnv = true
	rt.run(t)
	if strings.Contains(rt.log.String(), "no OTLP export arrived") {
		t.Errorf("warned though the command exported elsewhere:\n%s", rt.log)
	}
	if tr := decodeCapture(t, rt.opts.Dir, &CaptureDecoder{}); hasWarning(tr, "capture-no-spans") {
		t.Errorf("warnings %v", tr.Warnings.List)
	}
}
