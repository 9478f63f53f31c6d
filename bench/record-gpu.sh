#!/usr/bin/env bash
# bench/record-gpu.sh — check `llmprof record`'s NVML capture on a GPU host.
#
# Run from anywhere in the repository on a Linux machine with an NVIDIA GPU,
# its driver (libnvidia-ml.so.1) and Go (NVML is loaded at run time, no cgo):
#
#     bench/record-gpu.sh            # 20 s per run
#     DUR=60 bench/record-gpu.sh     # longer runs
#     KEEP=1 bench/record-gpu.sh     # keep the captures (path printed)
#
# It records an idle `sleep` three times — NVML at the default cadence, at a
# 10 ms device poll, and without NVML — and reports, from the captures:
#
#   rate     device rows per GPU per second against the configured cadence,
#            GPM metric values, ring-buffer samples per sampling type (the
#            driver's native rate), per-process rows;
#   poll     what one device poll (every query of one GPU) costs, p50/p99;
#   clock    realtime at each drain minus the newest NVML timestamp drained,
#            for ring-buffer and per-process samples: a few hundred ms and
#            never negative if NVML stamps with CLOCK_REALTIME µs (the capture
#            reader assumes it; docs/record.md), hours or years off if not;
#   overhead the recorder's CPU time (user+sys) per second of wall time with
#            NVML at each cadence, next to the run without NVML — a ratio
#            measured in the same script; and, if python3 has torch, the
#            matmul throughput of a GPU workload recorded with NVML at 10 ms
#            relative to the same workload run bare.
#
# Exit status: 0 all checks passed, 1 a check failed, 0 with "SKIP" when
# there is no NVIDIA GPU here (nothing to check).
set -euo pipefail

DUR=${DUR:-20}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
WORK=$(mktemp -d "${TMPDIR:-/tmp}/record-gpu.XXXXXX")
if [[ -z "${KEEP:-}" ]]; then trap 'rm -rf "$WORK"' EXIT; else echo "captures kept in $WORK"; fi

if ! command -v nvidia-smi >/dev/null 2>&1 || ! nvidia-smi -L >/dev/null 2>&1; then
	echo "SKIP: no NVIDIA GPU or driver on this machine (nvidia-smi -L fails); nothing to check"
	exit 0
fi
nvidia-smi -L

echo "building llmprof and recordgpu (CGO_ENABLED=0: the cgo-free NVML binding)"
(cd "$ROOT" && CGO_ENABLED=0 go build -o "$WORK/llmprof" ./cmd/llmprof 2>/dev/null)
(cd "$ROOT" && go build -o "$WORK/recordgpu" ./bench/recordgpu)

# record NAME FLAGS... -- runs `sleep` under record for $DUR s, prints
# "NAME wall user sys" to $WORK/times.
record() {
	local name=$1
	shift
	local TIMEFORMAT="$name %R %U %S"
	# --duration stops `sleep` with SIGINT: record then exits 130, which is
	# expected here; the manifest says "complete".
	{ time "$WORK/llmprof" record -o "$WORK/$name.llmprof" --duration "${DUR}s" --tail 0s --otlp-quiet 0s "$@" \
		-- sleep $((DUR + 600)) 2>"$WORK/$name.log" || true; } 2>>"$WORK/times"
	grep -q '"status": "complete"' "$WORK/$name.llmprof/manifest.json" ||
		{ echo "record ($name) did not complete:"; cat "$WORK/$name.log"; exit 1; }
}

record nvml-default --require-gpu
record nvml-10ms --require-gpu --nvml-interval 10ms
record no-nvml --no-nvml

status=0
for name in nvml-default nvml-10ms; do
	echo
	echo "== $name"
	"$WORK/recordgpu" "$WORK/$name.llmprof" || status=1
done

echo
echo "== recorder CPU (user+sys per wall second; same script, same host)"
awk '{ cpu = ($3 + $4) / $2 * 100; printf "%-14s %6.2f%% of one core\n", $1, cpu; c[$1] = cpu }
     END { if (c["no-nvml"] > 0) { printf "NVML at defaults costs %.2f%% of a core over the bare recorder; at 10 ms %.2f%%\n",
           c["nvml-default"] - c["no-nvml"], c["nvml-10ms"] - c["no-nvml"] } }' "$WORK/times"

if python3 -c 'import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)' 2>/dev/null; then
	echo
	echo "== GPU workload: matmul throughput recorded (NVML every 10 ms) / bare"
	cat >"$WORK/mm.py" <<'PY'
import sys, time, torch
secs = float(sys.argv[1])
a = torch.randn(8192, 8192, device="cuda", dtype=torch.float16)
b = torch.randn(8192, 8192, device="cuda", dtype=torch.float16)
for _ in range(10): a @ b
torch.cuda.synchronize()
n, t0 = 0, time.perf_counter()
while time.perf_counter() - t0 < secs:
    for _ in range(20): a @ b
    torch.cuda.synchronize()
    n += 20
print(n / (time.perf_counter() - t0))
PY
	bare=$(python3 "$WORK/mm.py" "$DUR")
	"$WORK/llmprof" record -o "$WORK/mm.llmprof" --require-gpu --nvml-interval 10ms --tail 0s --otlp-quiet 0s \
		-- python3 "$WORK/mm.py" "$DUR" >"$WORK/mm.out" 2>"$WORK/mm.log"
	recorded=$(tail -1 "$WORK/mm.out")
	awk -v b="$bare" -v r="$recorded" 'BEGIN { printf "bare %.1f matmul/s, recorded %.1f matmul/s, ratio %.4f\n", b, r, r / b }'
	"$WORK/recordgpu" "$WORK/mm.llmprof" || status=1
else
	echo
	echo "(python3 with CUDA torch not found: GPU-workload overhead not measured)"
fi
exit $status
