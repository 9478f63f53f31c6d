package otlp_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/llmprof/llmprof/ingest"
	"github.com/llmprof/llmprof/ingest/otlp"
	"github.com/llmprof/llmprof/ingest/otlp/otlptest"
	"github.com/llmprof/llmprof/internal/golden"
)

// encoding is one form of the fixture, with the Source.Format it must be
// recognized as.
type encoding struct {
	name, format string
	data         []byte
}

// fixtureForms encodes the fixture in every form the decoder reads. The
// encodings come from the collector's marshalers (pdata) and from the
// otlptest rewriters that add what real emitters do differently.
func fixtureForms(td ptrace.Traces) []encoding {
	parts := otlptest.Split(td)
	var mixed, protoOnly [][]byte
	for i, p := range parts {
		protoOnly = append(protoOnly, otlptest.Zstd(otlptest.Proto(p)))
		switch i % 3 {
		case 0:
			mixed = append(mixed, otlptest.Proto(p))
		case 1:
			mixed = append(mixed, otlptest.Zstd(otlptest.Proto(p)))
		default:
			mixed = append(mixed, otlptest.JSON(p))
		}
	}
	var legacyLines []byte
	for _, p := range parts {
		legacyLines = append(legacyLines, otlptest.Quirky(otlptest.JSON(p), otlptest.Quirks{
			Legacy: true, UpperHex: true, ValueFirst: true, UnknownFields: true})...)
		legacyLines = append(legacyLines, "\r\n"...)
	}
	return []encoding{
		{"otlp-json", "otlp-json", otlptest.JSON(td)},
		{"otlp-json-pretty", "otlp-json", otlptest.PrettyJSON(td)},
		{"otlp-json-lines", "otlp-json-lines", otlptest.JSONLines(parts)},
		{"otlp-json-snake-base64-enum-names-bare-ints", "otlp-json", otlptest.Quirky(otlptest.JSON(td), otlptest.Quirks{
			SnakeCase: true, Base64IDs: true, EnumNames: true, BareInts: true})},
		{"otlp-json-lines-legacy-upper-hex-value-first-unknown-fields", "otlp-json-lines", legacyLines},
		{"otlp-proto", "otlp-proto", otlptest.Proto(td)},
		{"otlp-proto-framed-mixed-payloads", "otlp-proto-framed", otlptest.Frame(mixed...)},
		{"otlp-proto-framed-zstd", "otlp-proto-framed", otlptest.Frame(protoOnly...)},
		{"gzip-otlp-json-lines", "otlp-json-lines", otlptest.Gzip(otlptest.JSONLines(parts))},
		{"zstd-otlp-proto", "otlp-proto", otlptest.Zstd(otlptest.Proto(td))},
		{"gzip-otlp-json-pretty", "otlp-json", otlptest.Gzip(otlptest.PrettyJSON(td))},
		{"tempo-json", "tempo-json", otlptest.Tempo(td)},
	}
}

// openBytes writes data to a file and opens it the way the CLI does.
func openBytes(t *testing.T, name string, data []byte) *ingest.Trace {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	tr, err := ingest.Open(context.Background(), []string{path}, []ingest.Decoder{&otlp.Decoder{}}, ingest.OpenOptions{})
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return tr
}

func dump(t *testing.T, tr *ingest.Trace, opts ingest.DumpOptions) string {
	t.Helper()
	var buf bytes.Buffer
	if err := tr.Dump(&buf, opts); err != nil {
		t.Fatal(err)
	}
	return buf.String()
}

// checkGolden compares got with testdata/name, or rewrites it under LLMPROF_UPDATE_GOLDEN=1.
func checkGolden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if golden.Update() {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with LLMPROF_UPDATE_GOLDEN=1 to create it)", err)
	}
	if got != string(want) {
		t.Errorf("dump differs from %s (LLMPROF_UPDATE_GOLDEN=1 rewrites it):\n%s", path, lineDiff(string(want), got))
	}
}

// lineDiff shows the first lines where two texts differ.
func lineDiff(want, got string) string {
	w, g := strings.Split(want, "\n"), strings.Split(got, "\n")
	var b strings.Builder
	shown := 0
	for i := 0; i < max(len(w), len(g)) && shown < 6; i++ {
		var wl, gl string
		if i < len(w) {
			wl = w[i]
		}
		if i < len(g) {
			gl = g[i]
		}
		if wl != gl {
			b.WriteString("line " + strconv.Itoa(i+1) + ":\n  want " + wl + "\n  got  " + gl + "\n")
			shown++
		}
	}
	return b.String()
}

// The fixture decodes to the same canonical dump from every form.
func TestFixtureEveryFormSameDump(t *testing.T) {
	td := otlptest.Fixture()
	wantSpans := td.SpanCount()
	// The golden file is what the collector's pdata reads from the fixture.
	ref := fromPdata(td)
	ref.Validate()
	checkGolden(t, "fixture.golden", dump(t, ref, ingest.DumpOptions{}))
	for _, enc := range fixtureForms(td) {
		t.Run(enc.name, func(t *testing.T) {
			tr := openBytes(t, enc.name, enc.data)
			checkGolden(t, "fixture.golden", dump(t, tr, ingest.DumpOptions{}))
			src := tr.Sources[0]
			if src.Format != enc.format {
				t.Errorf("Format = %q, want %q", src.Format, enc.format)
			}
			if src.Spans != wantSpans || len(tr.Spans) != wantSpans {
				t.Errorf("Source.Spans = %d, spans = %d, want %d", src.Spans, len(tr.Spans), wantSpans)
			}
			// Named after the host's identity, never its name.
			if id := ingest.HostID("gpu-node-7"); src.Clock.Name != "realtime@"+id || src.Clock.Kind != ingest.ClockRealtime || src.Host != id {
				t.Errorf("Clock = %+v, Host %q", src.Clock, src.Host)
			}
			if len(tr.Resources) != 2 || len(tr.Scopes) != 3 {
				t.Errorf("%d resources, %d scopes; want 2 and 3 (repeats shared)", len(tr.Resources), len(tr.Scopes))
			}
			// The vLLM spans' parents live in the client's service: that is
			// the only thing worth a warning in this input.
			for _, w := range tr.Warnings.List {
				if w.Code != "dangling-parent" {
					t.Errorf("unexpected warning: %s", w)
				}
			}
		})
	}
}

// Jaeger JSON carries less than OTLP (no scope or link attributes, no
// arrays); what it carries decodes exactly as the OTLP original reduced to it.
func TestFixtureJaegerMatchesOTLP(t *testing.T) {
	td := otlptest.Fixture()
	want := dump(t, openBytes(t, "view.pb", otlptest.Proto(otlptest.JaegerView(td))), ingest.DumpOptions{})
	for _, bare := range []bool{false, true} {
		name := "jaeger-data.json"
		if bare {
			name = "jaeger-bare-trace.json"
		}
		t.Run(name, func(t *testing.T) {
			tr := openBytes(t, name, otlptest.Jaeger(td, bare))
			if tr.Sources[0].Format != "jaeger-json" {
				t.Errorf("Format = %q", tr.Sources[0].Format)
			}
			got := dump(t, tr, ingest.DumpOptions{})
			if bare {
				// Only the first trace: the first llm_request span.
				if len(tr.Spans) != 1 || !strings.Contains(got, `name="llm_request"`) {
					t.Fatalf("bare trace decoded to:\n%s", got)
				}
				return
			}
			if got != want {
				t.Errorf("Jaeger decode differs from the OTLP view:\n%s", lineDiff(want, got))
			}
			if tr.Sources[0].Clock.Name != "realtime@"+ingest.HostID("gpu-node-7") {
				t.Errorf("Clock = %+v", tr.Sources[0].Clock)
			}
		})
	}
}

// DecodePayload, as the capture reader calls it once per stored payload,
// rebuilds the same trace from per-batch payloads in either encoding and
// shares the resources and scopes they repeat.
func TestDecodePayloadPerBatch(t *testing.T) {
	td := otlptest.Fixture()
	for _, enc := range []otlp.Encoding{otlp.Proto, otlp.JSON} {
		t.Run(enc.String(), func(t *testing.T) {
			tr := ingest.New()
			tr.Sources = []ingest.Source{{Path: "capture", Format: "capture"}}
			for i, p := range otlptest.Split(td) {
				payload := otlptest.Proto(p)
				if enc == otlp.JSON {
					payload = otlptest.JSON(p)
				}
				if err := otlp.DecodePayload(tr, 0, payload, enc, "payload "+strconv.Itoa(i)); err != nil {
					t.Fatal(err)
				}
			}
			tr.Validate()
			checkGolden(t, "fixture.golden", dump(t, tr, ingest.DumpOptions{}))
			if tr.Sources[0].Spans != td.SpanCount() {
				t.Errorf("Source.Spans = %d, want %d", tr.Sources[0].Spans, td.SpanCount())
			}
			if c, host := otlp.ClockDomain(tr, 0); c.Name != "realtime@"+ingest.HostID("gpu-node-7") || host != ingest.HostID("gpu-node-7") {
				t.Errorf("ClockDomain = %+v, host %q", c, host)
			}
		})
	}
}
