// Package stat is the statistics kit the analysis stages share: the
// numpy-compatible quantile, the median and Theil–Sen (quantile.go), rank
// tests and the Hodges–Lehmann estimators with their intervals (rank.go,
// shift.go, signedrank.go), bootstrap resampling by multiplicities
// (resample.go), the effective sample size of a series (neff.go), least
// squares with its sandwich covariances (ols.go) and false-discovery-rate
// q-values (multitest.go). It sits beside the pipeline: align, attribution,
// compare, causal, history, record, report and signals call it rather than
// each keeping a copy, and it imports only the standard library and gonum.
//
// Each estimator's comment names its source and its assumptions; the tests
// check them against published tables (NIST, Stata, R) or brute force.
package stat
