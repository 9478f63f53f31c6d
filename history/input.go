package history

import (
	"context"

	"github.com/llmprof/llmprof/compare"
)

// Run is one run of the series (compare.SeriesRun): what diff would
// compare, and where and when it was taken.
type Run = compare.SeriesRun

// Series is the runs read for a history (compare.RunSeries), in the order read
// until Order sorts them. The same reader and the same orders serve `diff
// --baseline-history`, so a history and a baseline history of the same
// directory are the same runs in the same order.
type Series = compare.RunSeries

// Load reads the runs of a history with compare.LoadSeries: each path is a
// run file (a saved analysis, a samples file, a `vllm bench serve` result, a
// raw trace), or a directory whose entries are runs, one per file or
// subdirectory; a directory's entry that is not a run is skipped with a
// warning.
func Load(ctx context.Context, paths []string, lopts compare.LoadOptions) (*Series, error) {
	return compare.LoadSeries(ctx, paths, lopts)
}

// Orders the runs may be put in (Series.Order).
const (
	OrderAuto  = compare.OrderAuto
	OrderTime  = compare.OrderTime
	OrderName  = compare.OrderName
	OrderMtime = compare.OrderMtime
	OrderGiven = compare.OrderGiven
)
