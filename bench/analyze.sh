#!/usr/bin/env bash
# End-to-end analyze at scale (DESIGN §12: 10 M GPU ops + ~1 M spans in < 30 s
# and < 4 GiB on 2 cores). Generates a long simulated run once (OTLP framed
# protobuf + an nsys export with decode steps replayed as CUDA graphs), then in
# one run times, on the same warm files:
#   (a) cat of the inputs (the I/O floor),
#   (b) the sqlite3 shell's kernel summary on the export (a reference that
#       reads only the kernel table),
#   (c) llmprof analyze (decode both, align, attribute requests, steps and
#       every token, GPU section, tenants), with peak RSS.
# Needs go, /usr/bin/time, and sqlite3 for (b). BENCH_DURATION scales the run.
set -euo pipefail
cd "$(dirname "$0")/.."
dur=${BENCH_DURATION:-870s}
win=${BENCH_NSYS:-600s}
dir=${BENCH_DIR:-/tmp/llmprof-bench-analyze-$dur}
bin=$(mktemp -d)/llmprof
go build -o "$bin" ./cmd/llmprof
if [ ! -f "$dir/gpu.nsys.sqlite" ]; then
  echo "generating $dir (once)…"
  "$bin" demo --duration "$dur" --nsys "$win" --cuda-graphs --encoding proto-framed "$dir"
fi
ls -l "$dir"
t() { /usr/bin/time -f "%e s wall, %U s user, %S s sys, %M KiB peak" "$@"; }
echo "(a) cat:"
t cat "$dir"/* > /dev/null
if command -v sqlite3 >/dev/null; then
  echo "(b) sqlite3 kernel summary:"
  t sqlite3 "$dir/gpu.nsys.sqlite" "SELECT s.value, count(*), sum(k.end-k.start), avg(k.end-k.start), min(k.end-k.start), max(k.end-k.start)
    FROM CUPTI_ACTIVITY_KIND_KERNEL k JOIN StringIds s ON s.id = k.demangledName GROUP BY 1 ORDER BY 3 DESC" > /dev/null
fi
echo "(c) llmprof analyze:"
t "$bin" analyze "$dir" > /tmp/llmprof-bench-analyze.txt
sed -n '1,8p' /tmp/llmprof-bench-analyze.txt
