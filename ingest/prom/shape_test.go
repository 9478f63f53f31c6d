package prom

import (
	"context"
	"strings"
	"testing"

	"github.com/llmprof/llmprof/ingest"
)

// A sample that does not fit its declared type is kept, with one warning per
// metric and problem that names the metric, the file and the line.
func TestShapeWarnings(t *testing.T) {
	const hist = "# TYPE h histogram\n"
	cases := []struct {
		name, text string
		want       []string // "code@line: message part"
	}{
		{"good histogram", hist + "h_bucket{le=\"0.1\"} 1\nh_bucket{le=\"1\"} 3\nh_bucket{le=\"+Inf\"} 3\nh_count 3\nh_sum 1.5\n", nil},
		{"two histograms interleaved by labels", hist + "h_bucket{a=\"x\",le=\"1\"} 5\nh_bucket{a=\"x\",le=\"+Inf\"} 5\nh_bucket{a=\"y\",le=\"1\"} 1\nh_bucket{a=\"y\",le=\"+Inf\"} 2\n", nil},
		{"not cumulative", hist + "h_bucket{le=\"0.1\"} 5\nh_bucket{le=\"1\"} 3\nh_bucket{le=\"+Inf\"} 5\n",
			[]string{"bad-histogram@line 3: x.prom:line 3: histogram h: bucket le=1 counts 3, less than le=0.1's 5; buckets must be cumulative"}},
		{"bounds out of order", hist + "h_bucket{le=\"1\"} 1\nh_bucket{le=\"0.1\"} 1\n",
			[]string{"bad-histogram@line 3: histogram h: bucket le=0.1 after le=1; buckets must rise in le"}},
		{"le not a number", hist + "h_bucket{le=\"abc\"} 1\n", []string{`bad-histogram@line 2: histogram h has a bucket le="abc" that is not a number`}},
		{"bucket without le", hist + "h_bucket 1\n", []string{"bad-histogram@line 2: histogram h has a bucket without an le label"}},
		{"histogram sample without suffix", hist + "h 1\n", []string{"type-mismatch@line 2: h is declared histogram, but has a sample h without _bucket, _count or _sum"}},
		{"negative count", hist + "h_count -4\n", []string{"negative-count@line 2: histogram h_count has a negative value -4"}},
		{"negative bucket", hist + "h_bucket{le=\"1\"} -1\n", []string{"negative-count@line 2: histogram h: bucket le=1 has a negative count -1"}},
		{"negative counter", "# TYPE c counter\nc_total -1\n", []string{"negative-count@line 2: counter c has a negative value -1: c_total"}},
		{"summary without quantile", "# TYPE s summary\ns 1\n", []string{"type-mismatch@line 2: s is declared summary, but has a sample s without a quantile label"}},
		{"type redeclared", "# TYPE m counter\nm 1\n# TYPE m gauge\nm 2\n",
			[]string{"type-mismatch@line 3: # TYPE m gauge, but line 1 declared it counter; series seen before keep counter"}},
		{"same type every scrape", "# llmprof-scrape 1764583200000000000\n# TYPE m counter\nm 1\n# llmprof-scrape 1764583201000000000\n# TYPE m counter\nm 2\n", nil},
		{"one warning per metric", hist + "h_bucket{le=\"1\"} 5\nh_bucket{le=\"2\"} 1\n# llmprof-scrape 1764583201000000000\nh_bucket{le=\"1\"} 5\nh_bucket{le=\"2\"} 1\n",
			[]string{"bad-histogram@line 3: buckets must be cumulative"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			tr := ingest.New()
			tr.Sources = []ingest.Source{{Path: "x.prom"}}
			st, err := Parse(context.Background(), tr, strings.NewReader(c.text), ParseInput{ScrapeTime: 1764583200000000000}, Options{})
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, w := range tr.Warnings.List {
				got = append(got, w.Code+"@"+w.Pos+": "+w.String())
			}
			if len(got) != len(c.want) {
				t.Fatalf("warnings %q, want %q", got, c.want)
			}
			for i, w := range c.want {
				code, msg, _ := strings.Cut(w, ": ")
				if !strings.HasPrefix(got[i], code+": ") || !strings.Contains(got[i], msg) {
					t.Errorf("warning %q, want %q", got[i], w)
				}
			}
			// The samples are kept as they are.
			if want := strings.Count(c.text, "\n") - strings.Count(c.text, "#"); st.Samples != want {
				t.Errorf("%d samples kept, want %d", st.Samples, want)
			}
		})
	}
}
