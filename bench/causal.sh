#!/usr/bin/env bash
# Benchmarks of the tenant causal analysis (package causal), reported as
# ratios against a reference measured in the same process:
#   busy load over 1 M kernels (sorted as Validate leaves them, and shuffled)
#   vs. sorting their start times from a shuffled order;
#   the kernel view (KernelAnalyze) of one simulated 30 s run vs. the
#   attribution of that run's requests.
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
  /BenchmarkKernelAnalyze\/reference-attribution/ { ka += $3; nka++ }
  /BenchmarkKernelAnalyze\/kernel-view/           { kv += $3; nkv++ }
  END {
    if (nref && nbl) printf "busy load, sorted kernels / sort of shuffled starts (1 M kernels): %.2fx\n", (bl/nbl)/(ref/nref)
    if (nref && nbs) printf "busy load, shuffled kernels / sort of shuffled starts (1 M kernels): %.2fx\n", (bs/nbs)/(ref/nref)
    if (nka && nkv)  printf "kernel view / attribution of the same run (30 s, 4 tenants): %.2fx (%.0f ms vs %.0f ms per run)\n", (kv/nkv)/(ka/nka), kv/nkv/1e6, ka/nka/1e6
    if (nrl && nlm)  printf "analysis with lag model / request level only: %.2fx (%.1f ms vs %.1f ms per run)\n", (lm/nlm)/(rl/nrl), lm/nlm/1e6, rl/nrl/1e6
  }'
