#!/usr/bin/env bash
# bench/kineto.sh — the Kineto decoder's speed and memory against python3's
# json.load of the same file (docs/kineto.md).
#
# 1. bench/kinetobench gen writes a synthetic PyTorch profiler trace of
#    about LLMPROF_BENCH_MB MiB (default 300): a serving engine's step
#    annotations, a cpu_op around each launch, runtime calls, kernels,
#    copies and ac2g flows, in Kineto's layout.
# 2. Each reader decodes it in a fresh process, one after the other:
#    kinetobench decode (ingest.Open: decode and Validate, as analyze reads
#    it) and python3 -c 'json.load(open(f))' (what HTA's default parser and
#    most scripts start with); /usr/bin/time reports wall time and peak RSS.
#    Best of BENCHCOUNT runs (default 3).
#
# Figures are ratios measured in the same run on the same file, so a busy
# machine slows both sides.
set -euo pipefail
cd "$(dirname "$0")/.."

mb=${LLMPROF_BENCH_MB:-300}
count=${BENCHCOUNT:-3}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

go build -o "$work/kinetobench" ./bench/kinetobench
"$work/kinetobench" gen -o "$work/trace.pt.trace.json" -mb "$mb"
size=$(stat -c %s "$work/trace.pt.trace.json")

measure() { # name command...: prints "name seconds maxrss_kib" for the best run
	local name=$1 best_s="" best_kb=""
	shift
	for _ in $(seq "$count"); do
		/usr/bin/time -f "%e %M" -o "$work/time.txt" "$@" >"$work/out.txt"
		read -r s kb <"$work/time.txt"
		if [[ -z $best_s ]] || awk -v a="$s" -v b="$best_s" 'BEGIN { exit !(a < b) }'; then best_s=$s; fi
		if [[ -z $best_kb ]] || ((kb < best_kb)); then best_kb=$kb; fi
	done
	echo "$name $best_s $best_kb"
}

{
	measure llmprof "$work/kinetobench" decode "$work/trace.pt.trace.json"
	measure python3-json.load python3 -c 'import json, sys; json.load(open(sys.argv[1]))' "$work/trace.pt.trace.json"
} >"$work/results.txt"

awk -v size="$size" '
{ name[NR] = $1; s[NR] = $2; kb[NR] = $3 }
END {
	printf "file: %.1f MiB of Kineto JSON (uncompressed)\n\n", size / 1048576
	printf "%-20s %9s %9s %14s %12s\n", "reader", "seconds", "MB/s", "peak RSS MiB", "RSS / file"
	for (i = 1; i <= NR; i++)
		printf "%-20s %9.2f %9.1f %14.0f %12.2f\n", name[i], s[i], size / 1e6 / s[i], kb[i] / 1024, kb[i] * 1024 / size
	printf "\nllmprof against python3 json.load on the same file: %.2f× the throughput, %.2f× the memory\n", s[2] / s[1], kb[1] / kb[2]
	printf "memory goal: peak RSS <= 1.5× the file: %s (%.2f×)\n", (kb[1] * 1024 <= 1.5 * size) ? "met" : "NOT met", kb[1] * 1024 / size
}' "$work/results.txt"
