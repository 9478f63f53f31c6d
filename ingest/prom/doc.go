// Package prom decodes Prometheus and OpenMetrics text exposition — a scrape
// saved by curl, a file of timestamped samples, a directory of scrapes, the
// scrapes `llmprof record --scrape` writes into a capture — into the
// labelled metric series of an ingest.Trace (ingest/metrics.go). It is one of
// the decoders of the first pipeline stage (see package ingest):
//
//	vLLM /metrics, DCGM exporter, node_exporter ──► prom ──► ingest.Trace ──► signals
//
// # What is read
//
// Both text formats, line by line (docs/signals.md lists the rules):
// Prometheus text 0.0.4 (# HELP, # TYPE; integer millisecond timestamps) and
// OpenMetrics 1.0 (also # UNIT and # EOF; float second timestamps; exemplars
// after " # ", which are ignored). Label values and quoted UTF-8 names unescape
// \\, \" and \n. A counter keeps its exposed name (vllm:num_preemptions_total
// whether the family was announced with or without _total); a histogram's
// samples are <family>_bucket{le}, _sum and _count of one family, with le and
// quantile values normalized ("1.0" and "1" are the same bucket); the
// _created series client_python adds for counters, histograms and summaries
// are dropped, since they hold start times, not measurements.
//
// # Time
//
// A sample's own timestamp wins: an integer is milliseconds since the epoch
// when it is at least 1e11 and seconds otherwise (0.0.4 writes milliseconds,
// OpenMetrics seconds), a fraction is seconds. A sample without one takes the
// time of its scrape: the last "# llmprof-scrape <unix ns>" comment before it
// (how record writes scrapes), else a time in the file's name
// (1764583200.prom, 1764583200123.prom, 20251201T100000Z.txt,
// 2025-12-01T10:00:00Z.prom), else the file's modification time, with a
// warning. Times are the scraper's CLOCK_REALTIME.
//
// # Shape and budget
//
// A sample that does not fit its family's # TYPE is kept with a warning
// naming the metric, once per metric and problem: a type redeclared
// differently, a histogram sample without its suffix, buckets that do not
// rise in le or are not cumulative, a negative count. Samples go through an
// ingest.MetricSink, which coalesces a sample identical to the previous one
// of its series and stops the parse with an error past the input's metric
// budget (ingest.MetricLimits), so that a decompression bomb of one line
// repeated ends in an error naming the file, not in exhausted memory.
package prom
