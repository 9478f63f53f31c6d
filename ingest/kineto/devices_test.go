package kineto

import (
	"context"
	"strings"
	"testing"

	"github.com/llmprof/llmprof/ingest"
	"github.com/llmprof/llmprof/internal/shareddata"
)

// deviceName is the name the trace gives device dev (ok false: none).
func deviceName(tr *ingest.Trace, dev int16) (string, bool) {
	for _, d := range tr.Devices {
		if d.ID == dev {
			return d.Name, true
		}
	}
	return "", false
}

// HTA's MI250 trace lists devices 0–3 and runs its ops on device 2: named
// from deviceProperties.
func TestDeviceNamedFromProperties(t *testing.T) {
	tr := decodeReal(t, shareddata.Path(t, "testdata/kineto/hta-amd_trace-mi250_minitoy_train_ROCm6_2_kineto.json.gz"))
	if name, ok := deviceName(tr, 2); !ok || name != "AMD Radeon Graphics" {
		t.Fatalf("device 2 = %q, %v", name, ok)
	}
}

// A device the ops run on that deviceProperties does not list (a vLLM
// MI300X trace: devices 0–3 listed, ops on device 6; the fields are those
// of the MI250 trace) is shown by its index and says why it has no name;
// one with no deviceProperties at all too.
func TestDeviceOutsideProperties(t *testing.T) {
	for name, props := range map[string]string{
		"out of range": `"deviceProperties":[{"id":0,"name":"AMD Instinct MI300X"},{"id":3,"name":"AMD Instinct MI300X"}],`,
		"absent":       ``,
	} {
		t.Run(name, func(t *testing.T) {
			doc := `{"schemaVersion":1,` + props + `"traceEvents":[` +
				`{"ph":"X","cat":"kernel","name":"Cijk_Alik_Bljk_HHS_BH","pid":6,"tid":1,"ts":1700000000000000,"dur":10,"args":{"device":6,"stream":1,"correlation":5}}]}`
			tr, err := Decoder{}.DecodeReader(context.Background(), strings.NewReader(doc), "mi300x.json")
			if err != nil {
				t.Fatal(err)
			}
			if got, ok := deviceName(tr, 6); !ok || got != NoProperties {
				t.Fatalf("device 6 = %q, %v; want %q", got, ok, NoProperties)
			}
		})
	}
}

// An MTIA trace (libkineto's mtia_runtime and mtia_ccp_events categories)
// has no CUDA activity, and is not a CPU-only capture.
func TestAcceleratorWithoutCUDA(t *testing.T) {
	doc := `{"schemaVersion":1,"traceEvents":[` +
		`{"ph":"X","cat":"cpu_op","name":"aten::mm","pid":1,"tid":1,"ts":1700000000000000,"dur":10},` +
		`{"ph":"X","cat":"mtia_runtime","name":"mtiaLaunchKernel","pid":1,"tid":1,"ts":1700000000000002,"dur":3},` +
		`{"ph":"X","cat":"mtia_ccp_events","name":"kernel","pid":2,"tid":7,"ts":1700000000000006,"dur":4}]}`
	tr, err := Decoder{}.DecodeReader(context.Background(), strings.NewReader(doc), "mtia.json")
	if err != nil {
		t.Fatal(err)
	}
	var msgs []string
	for _, w := range tr.Warnings.List {
		msgs = append(msgs, w.Code+": "+w.Msg)
	}
	all := strings.Join(msgs, "\n")
	if !strings.Contains(all, "no-gpu: no CUDA or ROCm activity: the trace is from another accelerator (2 events of mtia_runtime, mtia_ccp_events, not read)") ||
		strings.Contains(all, "CPU-only") {
		t.Errorf("warnings:\n%s", all)
	}
}
