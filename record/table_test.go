package record

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

// writeTable writes rows through a real tableWriter, flushing a batch every
// batchRows rows, and returns the directory.
func writeTable[R any](t *testing.T, ts *tableSchema, rows []R, batchRows int) (string, FileInfo) {
	t.Helper()
	dir := t.TempDir()
	tw, err := newTableWriter[R](dir, ts, writerConfig{captureID: "test", batchRows: batchRows, flushInterval: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rows {
		if err := tw.Send(context.Background(), r); err != nil {
			t.Fatal(err)
		}
	}
	return dir, tw.Close()
}

func readAll[R any](t *testing.T, dir string) ([]R, TableRead) {
	t.Helper()
	var out []R
	res, err := ReadTable(&Capture{Dir: dir}, func(r *R) error {
		out = append(out, *r)
		return nil
	})
	if err != nil {
		t.Fatalf("ReadTable: %v", err)
	}
	return out, res
}

func TestTableRoundTrip(t *testing.T) {
	t.Run("device samples with nulls", func(t *testing.T) {
		rows := []DeviceSample{
			{MonoNs: 1, RealNs: 2, PollLatencyNs: 3, GPU: 0, GPUUUID: "GPU-a", UtilGPUPct: ptr(uint32(42)), MemUsedBytes: ptr(uint64(1 << 40))},
			{MonoNs: 4, RealNs: 5, GPU: 1, GPUUUID: "GPU-b", MIGUUID: ptr("MIG-x"), GI: ptr(int32(3)), PowerAvgMW: ptr(uint32(350_000)),
				NVLinkTXKiB: ptr(uint64(7)), ClocksEventReasons: ptr(uint64(1) << 63)},
		}
		dir, fi := writeTable(t, deviceSchema, rows, 1)
		got, res := readAll[DeviceSample](t, dir)
		if !reflect.DeepEqual(got, rows) {
			t.Fatalf("round trip:\n got %+v\nwant %+v", got, rows)
		}
		if res.Truncated || res.Batches != 2 || fi.Rows != 2 || fi.Batches != 2 {
			t.Fatalf("read %+v, wrote %+v; want 2 rows in 2 batches, not truncated", res, fi)
		}
	})
	t.Run("otlp payloads keep their bytes", func(t *testing.T) {
		rows := []OTLPPayload{
			{RecvMonoNs: 1, Signal: SignalTraces, Transport: "grpc", Encoding: EncodingProto, Payload: []byte{0, 1, 2, 0xff}, Items: 9},
			{RecvMonoNs: 2, Signal: SignalLogs, Transport: "http", Encoding: EncodingJSON, ContentEncoding: "gzip", Payload: []byte(`{"resourceLogs":[]}`)},
			{RecvMonoNs: 3, Signal: SignalTraces, Payload: []byte{}},
		}
		dir, _ := writeTable(t, otlpSchema, rows, 100)
		got, _ := readAll[OTLPPayload](t, dir)
		if len(got) != 3 || !bytes.Equal(got[0].Payload, rows[0].Payload) || got[1].ContentEncoding != "gzip" || got[0].Items != 9 {
			t.Fatalf("got %+v", got)
		}
	})
	t.Run("every table type", func(t *testing.T) {
		check := func(name string, ok bool) {
			if !ok {
				t.Errorf("%s did not round-trip", name)
			}
		}
		d1, _ := writeTable(t, clockSchema, []ClockPair{{Label: "start", RealLoNs: 10, MonoNs: 5, RealHiNs: 12}}, 1)
		c, _ := readAll[ClockPair](t, d1)
		check("clock", len(c) == 1 && c[0].Uncertainty() == 1 && c[0].RealMidNs() == 11)
		d2, _ := writeTable(t, eventSchema, []Event{{Kind: "child_exit", Code: ptr(int64(3))}, {Kind: "x"}}, 1)
		e, _ := readAll[Event](t, d2)
		check("events", len(e) == 2 && *e[0].Code == 3 && e[1].Code == nil)
		d3, _ := writeTable(t, bufferedSchema, []BufferedSample{{SamplingType: 1, NVMLTimestampUs: 99, Value: 0.5}}, 1)
		b, _ := readAll[BufferedSample](t, d3)
		check("buffered", len(b) == 1 && b[0].NVMLTimestampUs == 99 && b[0].Value == 0.5)
		d4, _ := writeTable(t, processSchema, []ProcessSample{{Pid: 7, Source: "running", Descendant: true, GI: ptr(uint32(1))}}, 1)
		p, _ := readAll[ProcessSample](t, d4)
		check("process", len(p) == 1 && p[0].Descendant && *p[0].GI == 1 && p[0].SMUtilPct == nil)
		d5, _ := writeTable(t, gpmSchema, []GPMSample{{T0MonoNs: 1, T1MonoNs: 2, MetricID: 2, Value: 77.5}}, 1)
		g, _ := readAll[GPMSample](t, d5)
		check("gpm", len(g) == 1 && g[0].Value == 77.5 && g[0].GI == nil)
	})
}

// A recorder killed mid-write leaves a stream without its end marker,
// possibly cut inside a batch: every complete batch must still read (E7).
func TestTableTruncated(t *testing.T) {
	rows := make([]Event, 30)
	for i := range rows {
		rows[i] = Event{MonoNs: int64(i), Kind: "tick", Detail: strings.Repeat("x", i)}
	}
	dir, fi := writeTable(t, eventSchema, rows, 10) // 3 batches of 10
	path := filepath.Join(dir, TableFile(TableEvents))
	full, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Batches != 3 {
		t.Fatalf("wrote %d batches, want 3", fi.Batches)
	}
	for _, tc := range []struct {
		name      string
		cut       int // bytes removed from the end
		wantRows  []int
		truncated bool
	}{
		{"complete", 0, []int{30}, false},
		{"no end-of-stream marker", 8, []int{30}, false},
		{"last batch cut", 60, []int{20}, true},
		{"cut to almost nothing", len(full) - 10, []int{0}, true},
		{"empty file", len(full), []int{0}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := os.WriteFile(path, full[:len(full)-tc.cut], 0o644); err != nil {
				t.Fatal(err)
			}
			got, res := readAll[Event](t, dir)
			if len(got) != tc.wantRows[0] {
				t.Fatalf("read %d rows, want %d (%+v)", len(got), tc.wantRows[0], res)
			}
			for i, e := range got {
				if e.MonoNs != int64(i) || len(e.Detail) != i {
					t.Fatalf("row %d = %+v", i, e)
				}
			}
			if res.Truncated != tc.truncated {
				t.Fatalf("Truncated = %v (%v), want %v", res.Truncated, res.Err, tc.truncated)
			}
		})
	}
}

func TestReadTableErrors(t *testing.T) {
	t.Run("absent table", func(t *testing.T) {
		res, err := ReadTable(&Capture{Dir: t.TempDir()}, func(*GPMSample) error { return nil })
		if err != nil || res.Present {
			t.Fatalf("got %+v, %v; want absent, no error", res, err)
		}
	})
	t.Run("wrong table in the file", func(t *testing.T) {
		dir, _ := writeTable(t, eventSchema, []Event{{Kind: "x"}}, 1)
		if err := os.Rename(filepath.Join(dir, TableFile(TableEvents)), filepath.Join(dir, TableFile(TableClock))); err != nil {
			t.Fatal(err)
		}
		_, err := ReadTable(&Capture{Dir: dir}, func(*ClockPair) error { return nil })
		if err == nil || !strings.Contains(err.Error(), `holds table "events"`) {
			t.Fatalf("err = %v", err)
		}
	})
	t.Run("not arrow", func(t *testing.T) {
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, TableFile(TableEvents)), []byte("hello, this is not an arrow stream at all"), 0o644); err != nil {
			t.Fatal(err)
		}
		_, err := ReadTable(&Capture{Dir: dir}, func(*Event) error { return nil })
		if err == nil {
			t.Fatal("no error for a text file")
		}
	})
	t.Run("callback error stops the read", func(t *testing.T) {
		dir, _ := writeTable(t, eventSchema, []Event{{Kind: "a"}, {Kind: "b"}}, 1)
		stop := os.ErrClosed
		n := 0
		_, err := ReadTable(&Capture{Dir: dir}, func(*Event) error { n++; return stop })
		if err != stop || n != 1 {
			t.Fatalf("err = %v after %d rows", err, n)
		}
	})
}

// Samplers must never wait for the disk: a full queue drops and counts.
func TestTrySendDropsWhenFull(t *testing.T) {
	dir := t.TempDir()
	tw, err := newTableWriter[GPMSample](dir, gpmSchema, writerConfig{queueLen: 1, flushInterval: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	// Hold the writer's lock-free path busy by filling the queue faster than
	// one goroutine drains it; whatever is dropped must be counted, and
	// rows + dropped must be everything offered.
	const n = 20000
	sent := 0
	for range n {
		if tw.TrySend(GPMSample{MetricID: 2}) {
			sent++
		}
	}
	fi := tw.Close()
	if fi.Rows != int64(sent) || fi.Rows+fi.Dropped != n {
		t.Fatalf("rows %d + dropped %d != %d offered (%d accepted)", fi.Rows, fi.Dropped, n, sent)
	}
	if tw.TrySend(GPMSample{}) || tw.Send(context.Background(), GPMSample{}) != errTableClosed {
		t.Fatal("sends after Close must fail")
	}
}

type failingWriter struct{}

func (failingWriter) Write([]byte) (int, error) { return 0, errors.New("no space left on device") }

// A table that cannot be written refuses further rows (an OTLP client is
// told, instead of being acknowledged for data that is lost) and the
// manifest entry says why.
func TestTableWriteFailure(t *testing.T) {
	tw, err := newTableWriter[Event](t.TempDir(), eventSchema, writerConfig{batchRows: 1, flushInterval: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	tw.count.w = failingWriter{}
	if err := tw.Send(context.Background(), Event{Kind: "a"}); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for tw.failed.Load() == nil {
		if time.Now().After(deadline) {
			t.Fatal("the write error was never noticed")
		}
		time.Sleep(time.Millisecond)
	}
	if err := tw.Send(context.Background(), Event{Kind: "b"}); err == nil || !strings.Contains(err.Error(), "no space") {
		t.Fatalf("Send after a failed write: %v", err)
	}
	if fi := tw.Close(); !strings.Contains(fi.Error, "no space") || fi.Rows != 0 {
		t.Fatalf("manifest entry %+v", fi)
	}
}

// Reading a table is bounded in what arrow may allocate in all, not only
// per buffer: a table of many small, valid batches, each a highly
// compressible payload, stops at the table's budget as a corrupt batch
// naming the limit; a recorder-written table of ordinary payloads reads
// whole within the default budget, and what is held at once stays about
// one batch (buffers are given back as batches are released).
func TestTableReadBudget(t *testing.T) {
	read := func(t *testing.T, dir string, lim tableReadLimits) (TableRead, *boundedAllocator, int64) {
		t.Helper()
		path := filepath.Join(dir, TableFile(TableOTLP))
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		alloc := newBoundedAllocator(lim, int64(len(data)))
		res := TableRead{Path: path, Present: true}
		if err := readStreamAlloc(bytes.NewReader(data), alloc, otlpSchema, func(reflect.Value) error { return nil }, &res); err != nil {
			t.Fatal(err)
		}
		return res, alloc, int64(len(data))
	}
	t.Run("ordinary payloads", func(t *testing.T) {
		pb, _ := testTraces(50).MarshalProto()
		rows := make([]OTLPPayload, 3000)
		for i := range rows {
			rows[i] = OTLPPayload{Signal: SignalTraces, Payload: pb, Items: 50}
		}
		dir, _ := writeTable(t, otlpSchema, rows, 10)
		res, alloc, size := read(t, dir, defaultTableReadLimits)
		if res.Truncated || res.Rows != len(rows) || res.Err != nil {
			t.Fatalf("read %+v", res)
		}
		batch := int64(10 * len(pb))
		t.Logf("%d rows in %d batches, file %d KiB: arrow allocated %d KiB in all (%.1f× the file; the budget %d MiB), at most %d KiB at once (a batch's payloads %d KiB), %d at the end",
			res.Rows, res.Batches, size>>10, alloc.total.Load()>>10, float64(alloc.total.Load())/float64(size),
			alloc.maxTotal>>20, alloc.peak.Load()>>10, batch>>10, alloc.live.Load())
		if alloc.peak.Load() > 8*batch {
			t.Errorf("%d bytes held at once reading %d-byte batches: buffers are not given back", alloc.peak.Load(), batch)
		}
		if alloc.total.Load() > alloc.maxTotal/4 {
			t.Errorf("an ordinary table used %d of its %d-byte budget", alloc.total.Load(), alloc.maxTotal)
		}
	})
	t.Run("many compressible batches", func(t *testing.T) {
		zeros := make([]byte, 1<<20)
		rows := make([]OTLPPayload, 64)
		for i := range rows {
			rows[i] = OTLPPayload{Signal: SignalTraces, Payload: zeros}
		}
		dir, _ := writeTable(t, otlpSchema, rows, 1)
		lim := defaultTableReadLimits
		lim.minTotalBytes = 16 << 20
		res, alloc, size := read(t, dir, lim)
		t.Logf("64 batches of 1 MiB in a %d KiB file: %d rows read, %v", size>>10, res.Rows, res.Err)
		if !res.Truncated || res.Err == nil || !strings.Contains(res.Err.Error(), "a table of its size may") {
			t.Fatalf("want the table refused at its budget, got %+v", res)
		}
		if res.Rows == 0 || res.Rows >= len(rows) || alloc.total.Load() > alloc.maxTotal {
			t.Fatalf("%d rows read, %d bytes allocated of %d", res.Rows, alloc.total.Load(), alloc.maxTotal)
		}
		// And a table holding more than liveBytes at once (one batch here)
		// is refused too.
		lim = defaultTableReadLimits
		lim.liveBytes = 512 << 10
		if res, _, _ := read(t, dir, lim); !res.Truncated || res.Err == nil || !strings.Contains(res.Err.Error(), "held at once") {
			t.Fatalf("want a batch over the live limit refused, got %+v", res)
		}
	})
}
