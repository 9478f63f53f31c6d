#!/usr/bin/env bash
# Benchmarks of the tenant causal analysis (package causal), reported as
# ratios against a reference measured in the same process:
#   busy load over 1 M kernels (sorted as Validate leaves them, and shuffled)
#   vs. sorting their start times from a shuffled order.
# Usage: bench/causal.sh [count]   (run from the repository root)
set -euo pipefail
count="${1:-5}"
out="$(go test ./causal -run '^$' -bench 'BusyLoad|Analyze' -benchmem -count "$count")"
echo "$out"
echo "$out" | awk '
  /BenchmarkBusyLoad\/reference-sort-starts/ { ref += $3; nref++ }
  /BenchmarkBusyLoad\/busy-load-sorted/      { bl += $3; nbl++ }
  /BenchmarkBusyLoad\/busy-load-shuffled/    { bs += $3; nbs++ }
  /BenchmarkAnalyze\/request-level/           { rl += $3; nrl++ }
  /BenchmarkAnalyze\/with-lag-model/          { lm += $3; nlm++ }
  END {
    if (nref && nbl) printf "busy load, sorted kernels / sort of shuffled starts (1 M kernels): %.2fx\n", (bl/nbl)/(ref/nref)
    if (nref && nbs) printf "busy load, shuffled kernels / sort of shuffled starts (1 M kernels): %.2fx\n", (bs/nbs)/(ref/nref)
    if (nrl && nlm)  printf "analysis with lag model / request level only: %.2fx (%.1f ms vs %.1f ms per run)\n", (lm/nlm)/(rl/nrl), lm/nlm/1e6, rl/nrl/1e6
  }'
