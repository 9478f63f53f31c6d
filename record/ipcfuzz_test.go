package record

import (
	"bytes"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
)

// FuzzIPCStream fuzzes the Arrow IPC bytes of a capture table alone,
// straight into readStream: no temp directory, manifest or decoder, so it
// runs thousands of inputs a second — FuzzCapture, which builds a capture
// per input, managed 15 in three minutes and never reached the message
// lengths arrow-go trusts (issue 31: a 2 KB otlp.arrows declaring a
// 144 TB buffer killed the process with a fatal error no recover() sees).
// Seeds are real tables written by the recorder's writer.
func FuzzIPCStream(f *testing.F) {
	b := newCaptureBuilder(f, StatusComplete)
	pb, _ := testTraces(2).MarshalProto()
	writeRows(b, otlpSchema, OTLPPayload{Signal: SignalTraces, Payload: pb}, OTLPPayload{Signal: SignalTraces, Encoding: EncodingJSON, Payload: []byte(`{"resourceSpans":[]}`)})
	writeRows(b, deviceSchema, DeviceSample{GPU: 0, UtilGPUPct: ptr(uint32(1))})
	dir := b.finish()
	for i, ts := range allTableSchemas {
		if data, err := os.ReadFile(filepath.Join(dir, TableFile(ts.name))); err == nil {
			f.Add(data, uint8(i))
		}
	}
	f.Fuzz(func(t *testing.T, data []byte, which uint8) {
		ts := allTableSchemas[int(which)%len(allTableSchemas)]
		res := TableRead{Path: TableFile(ts.name), Present: true}
		rows := 0
		_ = readStream(bytes.NewReader(data), int64(len(data)), ts, func(row reflect.Value) error {
			rows++
			return nil
		}, &res)
		if rows != res.Rows {
			t.Fatalf("%d rows delivered, %d counted", rows, res.Rows)
		}
	})
}

// TestCraftedTableDeclaringHugeBuffer: the fuzz crasher above (the same
// 144 TB allocation issue 31 reports) now ends as a
// corrupt batch, reported, instead of a fatal out-of-memory.
func TestCraftedTableDeclaringHugeBuffer(t *testing.T) {
	raw, err := os.ReadFile("testdata/fuzz/FuzzIPCStream/ee1aa8c1cd6bc49d")
	if err != nil {
		t.Fatal(err)
	}
	line := strings.Split(string(raw), "\n")[1]
	data, err := strconv.Unquote(strings.TrimSuffix(strings.TrimPrefix(line, "[]byte("), ")"))
	if err != nil {
		t.Fatal(err)
	}
	res := TableRead{Path: TableFile(TableOTLP), Present: true}
	if err := readStream(strings.NewReader(data), int64(len(data)), otlpSchema, func(reflect.Value) error { return nil }, &res); err != nil {
		t.Fatal(err)
	}
	if !res.Truncated || res.Err == nil || !strings.Contains(res.Err.Error(), "bytes declared, over the 268435456-byte limit") {
		t.Fatalf("want a corrupt batch naming the declared size, got %+v", res)
	}
}
