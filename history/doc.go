// Package history is the series stage of `llmprof history`: it takes the
// runs of a nightly benchmark (saved analyses, raw runs or `vllm bench
// serve` results, loaded by compare), orders them, and for each metric finds
// the change points with e-divisive means (Matteson & James 2014) as Apache
// Otava does, each change then explained like `diff` explains a pair: the
// runs before and after it pooled as two sides of compare.Compare, with the
// runs as the replication unit. It sits beside compare in the pipeline
//
//	files ──► decoders ──► … ──► attribution ──► compare.Run ──► history ──► report
//
// and hands a Result to the renderers in report.
//
// # Detection
//
// Detect is Otava's procedure (otava/analysis.py): overlapping windows
// searched by e-divisive means at a relaxed level (the split step), the
// weak change points then tested again between their neighbours and
// dropped, weakest first, until every one is significant (the merge step).
// Where Otava (and the Hunter paper, Fleming et al. 2023) replaced the
// permutation test by Student's t-test, history keeps Matteson and James's
// permutation test: it assumes nothing about the shape of run-to-run noise
// (latency percentiles are skewed and outlier-prone) and is exact under
// exchangeability; it is made deterministic by a seed. Each test's
// statistic is the largest Q̂ over every split of the segments, and the
// permutations maximize it too, so choosing where to split is part of the
// null distribution.
//
// # The unit
//
// With enough runs (RequestPointsBelow) each run is one point: its value of
// the metric. With fewer, a permutation test of run values reaches useful
// levels poorly or not at all (four runs have 24 orders), so the points are
// the runs' requests — each request's value of the metric's series — and a change may
// only fall between runs. Permuting requests within a segment is then exact
// under the null that the requests of the segment's runs come from one
// distribution; what it does not cover is run-to-run variance beyond the
// requests' own, so a change found on requests must also pass Otava's
// t-test on the run values (confirmByRuns), whose variance is the spread
// between runs. docs/history.md measures both.
package history
