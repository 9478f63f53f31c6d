package record

import (
	"errors"
	"fmt"
	"github.com/llmprof/llmprof/ingest/otlp"

	"go.opentelemetry.io/collector/pdata/plog/plogotlp"
	"go.opentelemetry.io/collector/pdata/pmetric/pmetricotlp"
	"go.opentelemetry.io/collector/pdata/ptrace/ptraceotlp"
	"google.golang.org/protobuf/encoding/protowire"
)

// OTLP signals the receiver accepts.
const (
	SignalTraces  = "traces"
	SignalMetrics = "metrics"
	SignalLogs    = "logs"
)

// Payload encodings, as the OTLP table's encoding column spells them: the
// names of otlp.Encoding, the one payload-encoding type (the reader turns
// them back with otlp.ParseEncoding).
var (
	EncodingProto = otlp.Proto.String()
	EncodingJSON  = otlp.JSON.String()
)

var errMalformed = errors.New("malformed OTLP payload")

// countItems checks that payload is a well-formed export request of the
// signal and counts its items: spans, metrics or log records. The receiver
// stores payloads byte for byte and decodes them only when the capture is
// read, so this is the one look it takes on arrival: enough to refuse
// garbage (the client hears about it) and to count what came in.
//
// Protobuf is walked with protowire rather than unmarshalled: the three
// requests share one shape — resource_X (field 1) → scope_X (field 2) →
// items (field 2) — and walking it costs a fraction of building pdata
// objects, which matters under a load of spans. JSON, rarer and slower
// anyway, goes through pdata's OTLP/JSON unmarshalers.
func countItems(signal, encoding string, payload []byte) (int, error) {
	if encoding == EncodingJSON {
		return countJSON(signal, payload)
	}
	n := 0
	err := forEachBytesField(payload, 1, func(resource []byte) error {
		return forEachBytesField(resource, scopeFields, func(scope []byte) error {
			return forEachBytesField(scope, 2, func([]byte) error { n++; return nil })
		})
	})
	if err != nil {
		return 0, fmt.Errorf("%w: %s protobuf: %v", errMalformed, signal, err)
	}
	return n, nil
}

// scopeFields matches the scope level: scope_X is field 2; field 1000 is the
// pre-1.0 instrumentation_library_X that old SDKs still send.
const scopeFields = -1

func forEachBytesField(b []byte, num protowire.Number, fn func([]byte) error) error {
	for len(b) > 0 {
		n, typ, l := protowire.ConsumeTag(b)
		if l < 0 {
			return protowire.ParseError(l)
		}
		b = b[l:]
		match := n == num || (num == scopeFields && (n == 2 || n == 1000))
		if match && typ == protowire.BytesType {
			v, l := protowire.ConsumeBytes(b)
			if l < 0 {
				return protowire.ParseError(l)
			}
			if err := fn(v); err != nil {
				return err
			}
			b = b[l:]
			continue
		}
		l = protowire.ConsumeFieldValue(n, typ, b)
		if l < 0 {
			return protowire.ParseError(l)
		}
		b = b[l:]
	}
	return nil
}

func countJSON(signal string, payload []byte) (int, error) {
	var (
		n   int
		err error
	)
	switch signal {
	case SignalTraces:
		req := ptraceotlp.NewExportRequest()
		err = req.UnmarshalJSON(payload)
		n = req.Traces().SpanCount()
	case SignalMetrics:
		req := pmetricotlp.NewExportRequest()
		err = req.UnmarshalJSON(payload)
		n = req.Metrics().MetricCount()
	case SignalLogs:
		req := plogotlp.NewExportRequest()
		err = req.UnmarshalJSON(payload)
		n = req.Logs().LogRecordCount()
	default:
		return 0, fmt.Errorf("unknown signal %q", signal)
	}
	if err != nil {
		return 0, fmt.Errorf("%w: %s JSON: %v", errMalformed, signal, err)
	}
	return n, nil
}
