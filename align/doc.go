// Package align puts every record of a trace on one clock: it is the stage
// after decoding,
//
//	files ──► decoders ──► ingest.Trace ──► align ──► attribution ──► report
//
// and before any analysis that joins records from different inputs.
//
// Each input's timestamps carry a clock domain (ingest.Source.Clock): host
// CLOCK_REALTIME for OTLP spans and NVML samples, Nsight Systems session time
// (already shifted by the session's utcEpochNs), a capture's monotonic clock.
// Sources with the same domain name share one fit. For every domain other
// than the reference (the realtime clock of the first source with OTLP
// spans) Align fits
//
//	t_ref = t + offset + drift·(t − center)
//
// from the anchors that relate it to domains already aligned, strongest
// first (docs/design.md §6; docs/statistics.md part A):
//
//  1. clock-pair snapshots (ingest.AnchorClockPair): a bracketed read, the
//     reference instant lies in [RefLow, RefHigh] — two hard bounds and a
//     weighted point;
//  2. hard causal bounds across domains: a GPU op cannot start before its
//     launching API call (same Pid and correlation ID), a server span lies
//     inside the client span that called it, and — assumed by default, see
//     Options.MirrorInsideSpan — an NVTX range lies inside the OTLP span it
//     mirrors;
//  3. matched events: an NVTX range whose text carries span_id=<16 hex>,
//     request_id=<id> or step=<n>, paired with the OTLP span of that span ID,
//     llm.request.id/gen_ai.request.id or llm.step.id; failing those,
//     same-name sequences (as many NVTX ranges as OTLP spans of one name,
//     paired in order when the pairing is consistent);
//  4. the nsys session-start anchor (ingest.AnchorEpoch) alone, which the
//     decoder has already applied: the domain is left as it is and reported
//     "unrefined", with no bound, because its error is unknown.
//
// # The fit
//
// Clock steps are found first by binary segmentation of the soft anchors'
// residuals (a robust jump of the window medians beyond 10× the noise and
// StepMinNs, persisting for MinSegmentAnchors anchors), and again where the
// hard bounds admit no single line; each piece is fitted separately. In a
// piece the point estimate is weighted least squares on clock-pair midpoints
// (weight 1/width², widest 10% dropped) when there are clock pairs, else the
// Theil–Sen estimator on the matched events (median of pairwise slopes; it
// tolerates ~29% outliers), else the centre of the hard region (or the line
// hugging one-sided bounds, after Moon, Skelly and Towsley, INFOCOM 1999).
// With less than ten seconds of leverage the drift is not identified and is
// fixed at zero. Matched events farther than MatchToleranceNs from the fit
// are dropped as mismatches; more than a quarter of them means the anchors
// contradict each other, and the domain is reported "cannot-align".
//
// The hard bounds are half-planes in the (offset, drift) plane; their
// intersection with |drift| ≤ MaxDriftPPM is a convex polygon, the feasible
// region (Duda et al., ICDCS 1987). The estimate is projected into it, and
// the guaranteed bound is the farthest the region reaches from the estimate
// over the domain's records — a bound that holds whenever the assumptions do
// (the bounds are true, drift is affine within a piece and below
// MaxDriftPPM). An empty region is a step (split) or broken assumptions: up
// to 1% of the most violated bounds are dropped, else the bound is withdrawn
// with a warning (and for contradictory clock pairs the domain cannot be
// aligned). Residual p50/p99 of the soft anchors are reported beside it as a
// statistical figure.
//
// What cannot be aligned honestly is said so: an nsys export without its
// session anchor and without matched events, a monotonic clock without clock
// pairs, contradictory anchors, or a domain that, placed by a weak anchor, does
// not overlap the reference in time. Such a domain keeps its own clock and
// Result.Joinable reports false for its sources.
package align
