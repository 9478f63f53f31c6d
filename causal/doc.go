// Package causal attributes a tenant's latency to other tenants' load on a
// shared GPU; it sits after attribution in the pipeline
//
//	files ──► decoders ──► ingest.Trace ──► align ──► attribution ──► causal ──► report
//
// and answers "which neighbour is slowing me down, by how much, and how sure
// are we": "+12.3 ms TPOT per +10 pp GPU busy of tenant A (95% CI 9.1–15.4,
// q < 0.001); A's load explains 8% of B's latency".
//
// # Inputs
//
// Per-request records (Request: tenant, arrival, end, TTFT, TPOT, batch size,
// lengths, GPU and MIG instance) and every tenant's binned load (Load):
// BusyLoad from the tenant's kernels in the Trace (pid → tenant through a
// TenantMap, see MapTenants), SMUtilLoad from NVML per-process samples, or
// TokensInFlightLoad and PrefillTokensLoad from the requests themselves. A
// request's exposure to tenant A is A's load averaged over the request's
// window (Load.Exposure): the prefill phase for TTFT, the decode phase for
// TPOT. Builders sort and sweep; nothing joins all pairs of events.
//
// # Method
//
// Analyze runs, per target tenant B and metric, the three steps of the
// statistics reference (part B.2):
//
//  1. Request level (the effect size): OLS of B's log latency on B's exposure
//     to each other tenant's load, holding B's batch size and log prompt and
//     completion lengths fixed, with standard errors clustered by time
//     (the leave-one-cluster-out jackknife CV3 that MacKinnon, Nielsen &
//     Webb 2023 recommend over CR1, t with G−1 degrees of freedom). β_A is
//     the pair A → B: +Δ of A's load multiplies B's latency by exp(β_A·Δ).
//  2. Bin level (a second view): B's mean log latency per bin on A's load
//     now and L bins back, A's load M bins ahead as a placebo, B's own past
//     (AR order by BIC), B's controls, the other tenants' loads and a trend:
//     the cumulative effect with Newey–West (1987) errors, a Granger test of
//     the lags and a Wald test of the leads with HC3 errors.
//  3. Benjamini–Hochberg (1995) q-values across all pairs and metrics
//     (Benjamini–Yekutieli 2001 on request), and a verdict per pair.
//
// gonum supplies the QR factorization and the t and F distributions; the
// sandwich covariances, Wald and F tests and the FDR adjustment are written
// here and tested against published reference values (NIST's certified
// Longley regression, Stata's cluster-robust Grunfeld, Newey–West macro and
// HC3 Longley regressions, R's grangertest, R's p.adjust). FromAttribution
// turns attribution's requests into this package's input.
//
// # The kernel view
//
// KernelAnalyze (run by Analyze when Input.Kernels is set) measures the
// mechanism where it happens: each kernel of tenant B on a GPU against the
// share of its interval other tenants' work on that GPU overlapped, within
// kernel identity (name, grid, block, launch within its step) and B's
// batch, by weighted Gauss–Newton with errors clustered in time blocks whose
// length comes from the data (Politis–White), and a minimum-effect test.
// It carries 10–60 s captures, where the request level cannot; its impact
// gives the milliseconds of B's TTFT and TPOT attributable to A.
// ServedTenants names processes after the tenants of the requests they
// serve, so GPU work and requests carry the same names; a process serving
// several tenants is a shared source (SharedName), never paired with its
// own tenants.
//
// docs/tenants.md explains the method for users and quotes what the
// simulator tests measure.
//
// # Assumptions
//
// The effects are attributable interference only under the Assumptions
// every result carries: no unmeasured common driver beyond the controls, a
// log-linear response, errors independent across time clusters, aligned
// clocks. Tenants on different MIG instances are negative controls: a
// significant effect between them is reported as a sign of confounding.
package causal
