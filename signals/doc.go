// Package signals joins infrastructure metrics to latency: it takes the
// labelled metric series decoders put in an ingest.Trace (ingest/prom,
// OTLP metrics) and the request attribution of the same run, finds the time
// windows where a latency metric (TTFT, ITL, E2E p99, overall and per tenant)
// departs from its baseline, and ranks the signals that deviated in or just
// before each window. It runs after attribution in the pipeline:
//
//	ingest.Trace ──► attribution ──► signals ──► report ("INFRASTRUCTURE")
//
// # Method (docs/signals.md)
//
// Every series becomes one value per window: the mean level of a gauge, the
// per-second increase of a counter (a decrease is a reset, as in
// Prometheus's rate()). A latency window is a spike when its p99 has a
// robust z-score z = (x − median) / (1.4826·MAD) of at least SpikeZ against
// all windows of that metric and is at least SpikeRatio times the median
// (Iglewicz & Hoaglin 1993 for the modified z-score). Adjacent spike windows
// merge into one spike.
//
// For each spike and signal, the baseline is the signal's values in the
// windows around the spike that are not themselves spikes; the score is the
// robust z of the signal's mean over the spike's windows, shifted by a lag of
// −MaxLag…+MaxLag windows (positive: the signal moved first), keeping the lag
// of largest |z|. A baseline with MAD 0 (flat counters, clocks) uses a floor:
// 1.2533 × the mean absolute deviation, else the signal's resolution; a
// signal that changed from a constant is marked so. p-values are two-sided
// normal tails, Bonferroni-corrected over the 2·MaxLag+1 lags tried, and
// Benjamini–Hochberg (1995) controls the false discovery rate at FDR across
// all signals of a spike. Significant signals are ranked mechanism first
// (clock caps, pause frames, a full KV cache), then load and symptoms, each
// by |z|: load moves with latency whatever the cause, so a deviation is
// reported as "deviated together with", never as the cause.
package signals
