#!/usr/bin/env bash
# Peak memory per input byte. Issue 32's goal: analyze's peak RSS <= 2.5x
# the input on the run of about 850 MB (BENCH_DURATION=488s: 845 MB), which
# the script checks and prints for each build.
# Generates a simulated run once (OTLP framed protobuf + an nsys export), then
# prints, per command, the input bytes, peak RSS, RSS/input, wall and CPU:
#   analyze DIR               (decode both, merge, align, attribute, tenants)
#   tenants DIR               (the same without the GPU section and tokens)
#   export --parquet OUT DIR  (the same model without the tenant fit)
#   analyze gpu.nsys.sqlite   (one input: no merge)
# BENCH_BASE=<git rev> also builds that revision and prints its figures first,
# for a before/after on the same files in one run. BENCH_DURATION scales the
# run; BENCH_GRAPHS=0 replays decode steps as single launches (many more CUDA
# API calls per GPU op). Needs go and /usr/bin/time. Where the peak lies:
# go run ./bench/heapprof -o peak.pprof DIR (the heap profile at the largest
# live heap; -requests-only for tenants, -no-tenants for export).
set -euo pipefail
cd "$(dirname "$0")/.."
dur=${BENCH_DURATION:-290s}
graphs=${BENCH_GRAPHS:-1}
flag=--cuda-graphs
[ "$graphs" = 0 ] && flag=
dir=${BENCH_DIR:-/tmp/llmprof-bench-memory-$dur-g$graphs}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
. bench/lib.sh
go build -o "$tmp/llmprof" ./cmd/llmprof
settle "$tmp/llmprof"
bins=("$tmp/llmprof")
labels=("$(git rev-parse --short HEAD 2>/dev/null || echo this)")
if [ -n "${BENCH_BASE:-}" ]; then
  mkdir "$tmp/base"
  git archive "$BENCH_BASE" | tar -x -C "$tmp/base"
  (cd "$tmp/base" && go build -o "$tmp/llmprof-base" ./cmd/llmprof)
  settle "$tmp/llmprof-base"
  bins=("$tmp/llmprof-base" "${bins[@]}")
  labels=("$BENCH_BASE" "${labels[@]}")
fi
if [ ! -f "$dir/gpu.nsys.sqlite" ]; then
  echo "generating $dir (once)…"
  "$tmp/llmprof" demo --duration "$dur" --nsys "$dur" $flag --encoding proto-framed "$dir" >/dev/null
fi
size() { du -cb "$@" | tail -1 | cut -f1; }
run() { # label what input-bytes command...
  local label=$1 what=$2 in=$3
  shift 3
  /usr/bin/time -f "%e %U %S %M" -o "$tmp/time" "$@" >/dev/null 2>&1
  read -r wall usr sys kib < "$tmp/time"
  awk -v l="$label" -v c="$what" -v inb="$in" -v w="$wall" -v u="$usr" -v s="$sys" -v k="$kib" 'BEGIN {
    printf "%-10s %-22s input %7.1f MB  peak RSS %7.1f MB  RSS/input %5.2f  wall %6.1f s  cpu %6.1f s\n",
      l, c, inb/1e6, k*1024/1e6, k*1024/inb, w, u+s }'
  ratio=$(awk -v inb="$in" -v k="$kib" 'BEGIN { printf "%.2f", k*1024/inb }')
}
goal() { # label: analyze's RSS/input against issue 32's 2.5x
  awk -v l="$1" -v r="$ratio" 'BEGIN { printf "%-10s goal: analyze RSS/input %.2f <= 2.50: %s\n", l, r, (r <= 2.5 ? "met" : "not met") }'
}
all=$(size "$dir"/*)
one=$(size "$dir/gpu.nsys.sqlite")
for i in "${!bins[@]}"; do
  b=${bins[$i]} l=${labels[$i]}
  run "$l" "analyze" "$all" "$b" analyze "$dir"
  goal "$l"
  run "$l" "tenants" "$all" "$b" tenants "$dir"
  rm -rf "$tmp/pq"
  run "$l" "export --parquet" "$all" "$b" export --parquet "$tmp/pq" "$dir"
  run "$l" "analyze nsys only" "$one" "$b" analyze "$dir/gpu.nsys.sqlite"
done
