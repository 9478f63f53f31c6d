package driver

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/llmprof/llmprof/internal/shareddata"
)

// The GPU section says how much GPU time the kernel taxonomy left in other
// and which kernels hold it, in every format: HTA's MI250 trace has its
// hipBLASLt GEMMs in gemm and its device named from deviceProperties; the
// trace-diff control trace leaves 1.2% in other, most of it FBGEMM's
// bounds_check_indices_kernel.
func TestAnalyzeReportsUncategorizedShare(t *testing.T) {
	mi250 := shareddata.Path(t, "testdata/kineto/hta-amd_trace-mi250_minitoy_train_ROCm6_2_kineto.json.gz")
	control := shareddata.Path(t, "testdata/kineto/hta-trace_diff-control-control.json.gz")
	for _, c := range []struct {
		file string
		want []string
	}{
		{mi250, []string{"2 AMD Radeon Graphics", "gemm 20.3%", "uncategorized (other): 0.0% of GPU time"}},
		{control, []string{"uncategorized (other): 1.2% of GPU time; most in void bounds_check_indices_kernel"}},
	} {
		out := analyzeText(t, 0, Options{}, c.file)
		flat := strings.Join(strings.Fields(out), " ")
		for _, w := range c.want {
			if !strings.Contains(flat, w) {
				t.Errorf("%s: text lacks %q:\n%s", filepath.Base(c.file), w, out)
			}
		}
	}
	a := run(t, Options{}, control)
	rep := a.Report(testVersion)
	var js, page bytes.Buffer
	if err := rep.WriteJSON(&js); err != nil {
		t.Fatal(err)
	}
	var doc struct {
		GPU struct {
			Uncategorized struct {
				Share float64
				Top   []struct{ Name string }
			} `json:"uncategorized"`
		} `json:"gpu"`
	}
	if err := json.Unmarshal(js.Bytes(), &doc); err != nil {
		t.Fatal(err)
	}
	u := doc.GPU.Uncategorized
	if u.Share < 0.01 || u.Share > 0.05 || len(u.Top) == 0 || !strings.HasPrefix(u.Top[0].Name, "void bounds_check_indices_kernel") {
		t.Errorf("JSON gpu.uncategorized = %+v", u)
	}
	if err := rep.WriteHTML(&page, a.HTMLViews(rep)); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(page.String(), "uncategorized (other): 1.2% of GPU time; most in void bounds_check_indices_kernel") {
		t.Error("the HTML page does not report the uncategorized share")
	}
}

// TestZeroPaddedGzipInputs: the demo's gzip files (OTLP JSON Lines and an
// nsys SQLite export) with zero bytes after their gzip member — what tape
// tools and some uploaders produce, and gzip -d accepts — analyze exactly as
// the files themselves.
func TestZeroPaddedGzipInputs(t *testing.T) {
	src := demoDir
	dir := t.TempDir()
	ents, err := os.ReadDir(src)
	if err != nil {
		t.Fatal(err)
	}
	padded := 0
	for _, e := range ents {
		if e.IsDir() || strings.HasPrefix(e.Name(), ".") {
			continue
		}
		b, err := os.ReadFile(filepath.Join(src, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if strings.HasSuffix(e.Name(), ".gz") {
			b = append(b, make([]byte, 4096)...)
			padded++
		}
		if err := os.WriteFile(filepath.Join(dir, e.Name()), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if padded < 2 {
		t.Fatalf("the demo has %d gzip files, want the OTLP and the nsys one", padded)
	}
	want, got := analyzeJSON(t, src), analyzeJSON(t, dir)
	// The report names its inputs; the rest must be the same.
	got = strings.ReplaceAll(got, dir, src)
	if got != want {
		t.Errorf("the padded inputs analyze differently (%d bytes vs %d)", len(got), len(want))
	}
}
