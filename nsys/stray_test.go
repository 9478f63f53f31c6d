package nsys

import (
	"fmt"
	"strconv"
	"testing"

	"github.com/llmprof/llmprof/ingest"
	"github.com/llmprof/llmprof/nsys/internal/sqlite"
)

// A kernel table out of time order is read in storage order and put in
// (start, rowid) order in Go (stream.go's strays): the kernels come out in
// exactly the order of the sqlite3 shell's ORDER BY start, rowid — a few
// stray rows, ties among them, NULL starts, and a table so shuffled that
// every row is read by rowid — on one connection and in parallel alike.
func TestStrayRowsInShellOrder(t *testing.T) {
	const k = "CUPTI_ACTIVITY_KIND_KERNEL"
	cases := map[string]string{
		"two strays": `UPDATE ` + k + ` SET start = start - 2000000, "end" = "end" - 2000000 WHERE rowid IN (4000, 9000)`,
		"stray ties": `UPDATE ` + k + ` SET start = (SELECT start FROM ` + k + ` WHERE rowid = 100), "end" = (SELECT "end" FROM ` + k +
			` WHERE rowid = 100) WHERE rowid IN (5000, 5001, 12000)`,
		"late first row": `UPDATE ` + k + ` SET start = start + 10000000000, "end" = "end" + 10000000000 WHERE rowid = 1`,
		"shuffled":       `UPDATE ` + k + ` SET start = start - (rowid * 7919 % 1000) * 100000, "end" = "end" - (rowid * 7919 % 1000) * 100000`,
		"NULL starts": unconstrained(k) + `UPDATE ` + k + ` SET start = NULL WHERE rowid IN (3, 15000);` +
			`UPDATE ` + k + ` SET start = start - 5000000, "end" = "end" - 5000000 WHERE rowid = 16000`,
	}
	for name, sql := range cases {
		t.Run(name, func(t *testing.T) {
			path := benchFileCopy(t, 20_000)
			c, err := sqlite.OpenReadWrite(path)
			if err != nil {
				t.Fatal(err)
			}
			if err := c.Exec(sql); err != nil {
				t.Fatal(err)
			}
			c.Close()
			want := sqlite3Rows(t, path, `SELECT correlationId, start FROM `+k+` WHERE start IS NOT NULL ORDER BY start, rowid`)
			seq, par, serr, perr := decodeBoth(t, path, Decoder{}, 1000, 256)
			if serr != nil || perr != nil {
				t.Fatalf("%v / %v", serr, perr)
			}
			sameTrace(t, seq, par)
			var ops []ingest.GPUOp
			for _, op := range seq.GPUOps {
				if op.Kind == ingest.OpKernel {
					ops = append(ops, op)
				}
			}
			if len(ops) != len(want) {
				t.Fatalf("%d kernels, the shell has %d", len(ops), len(want))
			}
			first, _ := strconv.ParseInt(want[0][1], 10, 64)
			for i, w := range want {
				start, _ := strconv.ParseInt(w[1], 10, 64)
				got := fmt.Sprint(ops[i].Correlation, " ", ops[i].Start-ops[0].Start)
				if exp := fmt.Sprint(w[0], " ", start-first); got != exp {
					t.Fatalf("kernel %d: correlation, start %s; the shell's order has %s", i, got, exp)
				}
			}
		})
	}
}
