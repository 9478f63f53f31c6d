package ingest_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/klauspost/compress/gzip"

	"github.com/llmprof/llmprof/ingest"
	"github.com/llmprof/llmprof/ingest/otlp"
	"github.com/llmprof/llmprof/ingest/prom"
)

// Metric decompression bombs, made on the fly: a .prom.gz of one sample line
// repeated (500 M lines of "m 1" are 1.9 MB) and an OTLP-metrics .jsonl.gz
// of points with distinct times. Each must end in an error naming the file.

// writePromBomb writes lines of "m 1" through gzip to path.
func writePromBomb(t testing.TB, path string, lines int64) {
	t.Helper()
	block := []byte(strings.Repeat("m 1\n", 16<<10))
	writeGzip(t, path, gzip.BestCompression, func(w io.Writer) error {
		for n := int64(0); n < lines; {
			k := min(lines-n, int64(len(block)/4))
			if _, err := w.Write(block[:4*k]); err != nil {
				return err
			}
			n += k
		}
		return nil
	})
}

// writeOTLPBomb writes points of one gauge through gzip to path: JSON
// lines of perLine points a nanosecond apart, every line the same, so that
// gzip shrinks them as it does a line repeated (about 150 bytes a point, a
// hundredth of it compressed) while no point repeats the one before it.
func writeOTLPBomb(t testing.TB, path string, points, perLine int64) {
	t.Helper()
	var line strings.Builder
	line.WriteString(`{"resourceMetrics":[{"resource":{"attributes":[{"key":"service.name","value":{"stringValue":"bomb"}}]},"scopeMetrics":[{"metrics":[{"name":"m","gauge":{"dataPoints":[`)
	for i := range perLine {
		if i > 0 {
			line.WriteByte(',')
		}
		fmt.Fprintf(&line, `{"timeUnixNano":"%d","asDouble":1,"attributes":[{"key":"gpu","value":{"stringValue":"0"}}]}`, 1764583200000000000+i)
	}
	line.WriteString("]}}]}]}]}\n")
	writeGzip(t, path, gzip.DefaultCompression, func(w io.Writer) error {
		for n := int64(0); n < points; n += perLine {
			if _, err := io.WriteString(w, line.String()); err != nil {
				return err
			}
		}
		return nil
	})
}

func writeGzip(t testing.TB, path string, level int, body func(io.Writer) error) {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	zw, _ := gzip.NewWriterLevel(f, level)
	if err := body(zw); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
}

var metricDecoders = []ingest.Decoder{&otlp.MetricsDecoder{}, &prom.Decoder{}}

func openMetrics(paths []string, lim ingest.MetricLimits) (*ingest.Trace, error) {
	return ingest.Open(context.Background(), paths, metricDecoders, ingest.OpenOptions{Metrics: lim, Parallelism: 1})
}

// budgetError checks that err is the budget error of path, with want in it.
func budgetError(t *testing.T, err error, path, want string) {
	t.Helper()
	var ie *ingest.InputError
	if !errors.Is(err, ingest.ErrMetricBudget) || !errors.As(err, &ie) || ie.Path != path || !strings.Contains(err.Error(), want) {
		t.Fatalf("want the metric budget error of %s with %q, got %v", path, want, err)
	}
}

func TestMetricBudget(t *testing.T) {
	dir := t.TempDir()
	promBomb := filepath.Join(dir, "bomb-1764583200.prom.gz")
	writePromBomb(t, promBomb, 200_000)
	otlpBomb := filepath.Join(dir, "bomb.jsonl.gz")
	writeOTLPBomb(t, otlpBomb, 40_000, 200)

	t.Run("prom repeated line", func(t *testing.T) {
		_, err := openMetrics([]string{promBomb}, ingest.MetricLimits{MaxCoalesced: 50_000})
		budgetError(t, err, promBomb, "line 50002: metric budget exceeded: more than 50000 samples repeat the previous sample of their series")
	})
	t.Run("prom decoded samples", func(t *testing.T) {
		_, err := openMetrics([]string{promBomb}, ingest.MetricLimits{MaxSamples: 20_000})
		budgetError(t, err, promBomb, "more than 20000 samples decoded (1 kept, 19999 coalesced)")
	})
	t.Run("prom under the budget", func(t *testing.T) {
		// The repeated sample is coalesced: one sample, one warning.
		tr, err := openMetrics([]string{promBomb}, ingest.MetricLimits{})
		if err != nil {
			t.Fatal(err)
		}
		if len(tr.Samples) != 1 || tr.Sources[0].Samples != 1 {
			t.Errorf("%d samples (source %d)", len(tr.Samples), tr.Sources[0].Samples)
		}
		if got := warnings(tr); !strings.Contains(got, promBomb+": 199999 sample(s) repeat the previous sample of their series (same time, same value); coalesced into it [duplicate-samples]") {
			t.Errorf("warnings:\n%s", got)
		}
	})
	t.Run("otlp bytes", func(t *testing.T) {
		_, err := openMetrics([]string{otlpBomb}, ingest.MetricLimits{MaxBytes: 1 << 20})
		budgetError(t, err, otlpBomb, "metric budget exceeded: more than 1 MiB of samples and series")
		if !strings.Contains(err.Error(), otlpBomb+": line ") {
			t.Errorf("the error does not name the line: %v", err)
		}
	})
	t.Run("otlp repeated point", func(t *testing.T) {
		path := filepath.Join(dir, "same.jsonl.gz")
		line := `{"resourceMetrics":[{"scopeMetrics":[{"metrics":[{"name":"m","gauge":{"dataPoints":[{"timeUnixNano":"1764583200000000000","asDouble":1}]}}]}]}]}` + "\n"
		writeGzip(t, path, gzip.DefaultCompression, func(w io.Writer) error {
			_, err := io.WriteString(w, strings.Repeat(line, 3000))
			return err
		})
		_, err := openMetrics([]string{path}, ingest.MetricLimits{MaxCoalesced: 1000})
		budgetError(t, err, path, "line 1002: metric budget exceeded: more than 1000 samples repeat the previous sample of their series")
		tr, err := openMetrics([]string{path}, ingest.MetricLimits{})
		if err != nil || len(tr.Samples) != 1 || !strings.Contains(warnings(tr), "2999 sample(s) repeat") {
			t.Errorf("%v, %d samples\n%s", err, len(tr.Samples), warnings(tr))
		}
	})
	t.Run("otlp under the budget", func(t *testing.T) {
		tr, err := openMetrics([]string{otlpBomb}, ingest.MetricLimits{})
		if err != nil {
			t.Fatal(err)
		}
		if len(tr.Samples) != 40_000 || len(tr.Series) != 1 || len(tr.Warnings.List) != 0 {
			t.Errorf("%d samples, %d series\n%s", len(tr.Samples), len(tr.Series), warnings(tr))
		}
	})
	t.Run("series", func(t *testing.T) {
		path := filepath.Join(dir, "series-1764583200.prom")
		var b strings.Builder
		for i := range 5000 {
			fmt.Fprintf(&b, "m{i=\"%d\"} 1\n", i)
		}
		if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
		_, err := openMetrics([]string{path}, ingest.MetricLimits{MaxSeries: 1000})
		budgetError(t, err, path, "line 1001: metric budget exceeded: more than 1000 series")
	})
	t.Run("total", func(t *testing.T) {
		// Each input is under its own bound; together they are not.
		one, other := filepath.Join(dir, "one.jsonl.gz"), filepath.Join(dir, "other.jsonl.gz")
		writeOTLPBomb(t, one, 20_000, 200)
		writeOTLPBomb(t, other, 20_000, 200)
		lim := ingest.MetricLimits{MaxBytes: 1 << 20, MaxTotalBytes: 3 << 19}
		_, err := openMetrics([]string{one, other}, lim)
		if !errors.Is(err, ingest.ErrMetricBudget) || !strings.Contains(err.Error(), "other.jsonl.gz: line ") || !strings.Contains(err.Error(), "the inputs together hold more than 1572864 bytes") {
			t.Fatalf("%v", err)
		}
		if _, err := openMetrics([]string{one}, lim); err != nil {
			t.Fatalf("one input alone: %v", err)
		}
	})
}

// The bombs at full size, with the default budget: each ends in the error
// naming it, and the process's peak resident set stays under 1 GB. The
// decode runs in a child process (this test binary again), so that its
// peak is its own.
func TestMetricBombFullSize(t *testing.T) {
	if path := os.Getenv("LLMPROF_BOMB_CHILD"); path != "" {
		_, err := openMetrics([]string{path}, ingest.MetricLimits{})
		fmt.Println("ERROR:", err)
		return
	}
	if os.Getenv("LLMPROF_LONG") == "" {
		t.Skip("decompression bombs at full size (a minute): set LLMPROF_LONG=1")
	}
	dir := t.TempDir()
	promBomb := filepath.Join(dir, "bomb.prom.gz")
	writePromBomb(t, promBomb, 500_000_000)
	otlpBomb := filepath.Join(dir, "bomb.jsonl.gz")
	writeOTLPBomb(t, otlpBomb, 40_000_000, 200)
	for _, path := range []string{promBomb, otlpBomb} {
		st, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command(os.Args[0], "-test.run=^TestMetricBombFullSize$")
		cmd.Env = append(os.Environ(), "LLMPROF_BOMB_CHILD="+path)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("%s: %v\n%s", path, err, out)
		}
		peak := cmd.ProcessState.SysUsage().(*syscall.Rusage).Maxrss << 10 // KiB on Linux
		t.Logf("%s (%.1f MB): peak RSS %d MiB, %.1f s user\n%s", filepath.Base(path), float64(st.Size())/1e6, peak>>20,
			cmd.ProcessState.UserTime().Seconds(), strings.TrimSpace(string(out)))
		if !strings.Contains(string(out), "ERROR: "+path+": ") || !strings.Contains(string(out), ingest.ErrMetricBudget.Error()) {
			t.Errorf("%s: no budget error naming it:\n%s", path, out)
		}
		if peak >= 1e9 {
			t.Errorf("%s: peak RSS %d MiB, want under 1 GB", path, peak>>20)
		}
	}
}
