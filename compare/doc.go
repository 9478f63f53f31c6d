// Package compare is the statistics stage of `llmprof diff`: it takes the
// per-request observations of a baseline and a candidate (each one or more
// Runs, produced from attribution results) and decides, metric by metric,
// whether the candidate is confidently worse, confidently fine, or whether
// the data cannot tell, and which attribution buckets moved. It sits after
// attribution in the pipeline
//
//	files ──► decoders ──► ingest.Trace ──► align ──► attribution ──► compare ──► report
//
// and hands a Result to the renderers in report.
//
// # What is compared
//
// Latencies (ttft, tpot, itl, e2e, queue) at p50, p90, p99 and the mean; the
// rates throughput, token_throughput and goodput; and for every attribution
// bucket its time per output token (stage.prefill, token.gpu.attention,
// tenant.B). Percentiles interpolate linearly between order statistics,
// numpy's default.
//
// # How
//
// Latency effects are multiplicative, so changes are estimated on log
// latency and reported as percentages (exp(d) − 1).
//
//   - Medians of independent requests: the Mann–Whitney U test for the
//     p-value (exact null distribution up to 50 per side without ties, the
//     tie-corrected normal approximation beyond), and the Hodges–Lehmann
//     shift with Moses's interval, found by selection in the implicit matrix
//     of pairwise differences in O(n log n) time and O(n) memory.
//   - Tails, means and time per token: a seeded percentile bootstrap of the
//     statistic's change, each side resampled independently; with a block
//     length, Künsch's moving-block bootstrap over consecutive requests, for
//     autocorrelated runs. ITL (one value per token, tokens of a request are
//     not independent) always uses blocks at least one request long.
//   - One run per side of one workload replayed (the prompt lengths agree
//     request by request): the requests are paired, both sides resampled
//     with the same draws, and the shift is the one-sample Hodges–Lehmann
//     estimate of the requests' log changes with the Wilcoxon signed-rank
//     interval. One run per side of different workloads decides nothing:
//     the run is then the unit (workload.go).
//   - Several runs per side: the run is the replication unit; each metric
//     becomes one value per run and the runs are compared with U,
//     Hodges–Lehmann and Moses. Rates can only be compared this way.
//   - Every metric reports its minimum detectable effect: the true change
//     it would detect with the configured power (80%) at level α.
//
// # Verdicts
//
// A gate rule such as "ttft.p99 < +10%" is decided from the 1−α interval of
// the change: fail when it lies entirely above +10%, pass when entirely
// below, inconclusive otherwise or when a side has too few samples (a
// distribution-free p99 interval needs 368 per side at α = 0.05). Holm's
// correction across the gated metrics keeps the chance of any false fail at
// most α/2. The figures that decide are in the Result; renderers only format
// them.
package compare
