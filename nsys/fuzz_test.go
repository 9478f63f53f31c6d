package nsys

import (
	"context"
	"encoding/binary"
	"strconv"
	"testing"

	"github.com/llmprof/llmprof/ingest"
)

// fuzzDecoder is a decoder with no file behind it: names come from a fake
// StringIds holding ids 0–999.
func fuzzDecoder(epoch, nvtxEnd int64, kn KernelName) *decoder {
	t := ingest.New()
	t.Sources = []ingest.Source{{Path: "fuzz.sqlite"}}
	d := &decoder{ctx: context.Background(), opts: Decoder{KernelName: kn}, t: t, epoch: epoch, nvtxEnd: nvtxEnd, apiNames: map[int64]ingest.StrID{}}
	d.names = newNameCache(t.Strings, func(id int64) (string, bool, error) {
		if id < 0 || id >= 1000 {
			return "", false, nil
		}
		return "name" + strconv.FormatInt(id, 10), true, nil
	})
	d.internKeys()
	return d
}

// fuzzRow decodes data into a row for cols: per column a NULL flag byte and
// an 8-byte value; the rest is the text column.
func fuzzRow(cols []column, data []byte) *row {
	r := &row{rowid: 1, cells: make([]cell, len(cols))}
	for i := range cols {
		if len(data) < 9 {
			r.cells[i] = cell{null: true}
			continue
		}
		r.cells[i] = cell{v: int64(binary.LittleEndian.Uint64(data[1:9])), null: data[0]&1 == 1}
		data = data[9:]
	}
	r.text = data
	return r
}

func allPresent(table string, cols []column) *query {
	q := &query{table: table, cols: cols, present: make([]bool, len(cols))}
	for i := range q.present {
		q.present[i] = true
	}
	return q
}

// FuzzNsys drives the row conversion of every table the decoder reads with
// arbitrary values, NULLs and text: it must never panic, and what it keeps
// must satisfy the model's invariants.
func FuzzNsys(f *testing.F) {
	le := func(vals ...int64) []byte {
		var b []byte
		for _, v := range vals {
			b = append(b, 0)
			b = binary.LittleEndian.AppendUint64(b, uint64(v))
		}
		return b
	}
	// A kernel, a memcpy, an API call and an NVTX range from real exports.
	f.Add(uint8(0), int64(1_741_793_819_042_497_997), le(5844617581, 5844699053, 0, 7, 167, 282323165642752, 111, 112, 110, 1056, 1, 1, 256, 1, 1, 0, 0))
	f.Add(uint8(1), int64(0), le(7476932404, 7498288041, 0, 7, 213, 282323165642752, 394002432, 1))
	f.Add(uint8(5), int64(1_690_709_432_747_674_811), le(20275711, 25834197, 0, 281879794179649, 104166, 153, 0))
	f.Add(uint8(6), int64(1), append(le(8169420254, 8169475794, 59, 0, 0, 282323165693308, 0, 0, 0), []byte("FusionCache::get")...))
	f.Add(uint8(6), int64(1), le(-5, 0, 34, 0, 0, 1, 1<<40, 7, 2, -1, -1, -1, -1, -1, -1))
	f.Add(uint8(7), int64(5), le(100, 4294967297, 3, 1<<62))
	f.Add(uint8(8), int64(5), le(100, 282323165642752, 0, 0x7f0000000000, 1<<30, 2, 1, 0))
	f.Fuzz(func(t *testing.T, table uint8, epoch int64, data []byte) {
		d := fuzzDecoder(epoch, epoch+1_000_000, KernelName(table%3))
		domains := map[nvtxRef]ingest.StrID{{pid: 1, id: 2}: d.t.Strings.Intern("NCCL")}
		metrics := map[metricRef]ingest.StrID{{3, 1}: d.t.Strings.Intern("SMs Active [Throughput %]")}
		checkOp := func(o ingest.GPUOp, ok bool, kind ingest.GPUOpKind) {
			if ok && (o.End < o.Start || o.Kind != kind || o.Device < -1<<15) {
				t.Fatalf("bad op %+v", o)
			}
		}
		checkSpan := func(s ingest.Span, ok bool) {
			if ok && s.End < s.Start {
				t.Fatalf("span ends before it starts: %+v", s)
			}
			for _, a := range d.t.SpanAttrs(&s) {
				if a.Key == 0 {
					t.Fatalf("attribute without a key: %+v", s)
				}
			}
		}
		opTables := []struct {
			table string
			cols  []column
			conv  func(*query, *row) (ingest.GPUOp, bool)
			kind  ingest.GPUOpKind
		}{
			{tableKernel, kernelCols, d.kernel, ingest.OpKernel},
			{tableMemcpy, memcpyCols, d.memcpy, ingest.OpMemcpy},
			{tableMemset, memsetCols, d.memset, ingest.OpMemset},
			{tableSync, syncCols, d.sync, ingest.OpSync},
			{tableGraph, graphCols, d.graph, ingest.OpGraph},
		}
		switch k := int(table % 9); k {
		case 0, 1, 2, 3, 4:
			c := opTables[k]
			o, ok := c.conv(allPresent(c.table, c.cols), fuzzRow(c.cols, data))
			checkOp(o, ok, c.kind)
		case 5:
			s, ok := d.runtime(allPresent(tableRuntime, runtimeCols), fuzzRow(runtimeCols, data))
			if ok && s.End < s.Start {
				t.Fatalf("API call ends before it starts: %+v", s)
			}
			if ok && s.Origin != ingest.OriginCUDARuntime && s.Origin != ingest.OriginCUDADriver {
				t.Fatalf("API call with origin %s", s.Origin)
			}
		case 6:
			s, ok := d.nvtx(allPresent(tableNVTX, nvtxCols), fuzzRow(nvtxCols, data), domains)
			checkSpan(s, ok)
			if ok && s.Origin != ingest.OriginNVTX {
				t.Fatalf("NVTX span with origin %s", s.Origin)
			}
		case 7:
			d.metric(allPresent(tableMetrics, metricCols), fuzzRow(metricCols, data), metrics)
		case 8:
			e, ok := d.memoryEvent(allPresent(tableMemory, memoryCols), fuzzRow(memoryCols, data))
			if ok && e.Op != ingest.MemAlloc && e.Op != ingest.MemFree {
				t.Fatalf("memory event op %d", e.Op)
			}
		}
		// Every warning names the table and row.
		for _, w := range d.t.Warnings.List {
			if w.Path != "fuzz.sqlite" || w.Pos == "" {
				t.Fatalf("warning without a position: %+v", w)
			}
		}
	})
}
