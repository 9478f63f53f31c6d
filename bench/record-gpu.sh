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
#   torch    with vllm installed and VLLM_MODEL (default facebook/opt-125m)
#            in the local Hugging Face cache: a fixed load against vLLM bare,
#            recorded with --torch-profiler and recorded with --cupti, the
#            throughput and p50 ratios (profiled / bare), the traces complete,
#            analyze of the captures;
#   cupti    with a CUDA toolkit (cupti.h, libcupti; CUDA_HOME or
#            /usr/local/cuda) and a C compiler: the fp16 matmul loop below
#            recorded with --cupti against the same loop bare (throughput
#            ratio), and `recordgpu -cupti` on the capture: kernels, copies,
#            API calls, kernels joined to their launches, every process's
#            final flush, the CUPTI clock's fit to realtime and its bound;
#   overhead the recorder's CPU time (user+sys) per second of wall time with
#            NVML at each cadence, next to the run without NVML — a ratio
#            measured in the same script; and, if python3 has torch, the
#            matmul throughput of a GPU workload recorded with NVML at 10 ms
#            relative to the same workload run bare.
#
# Exit status: 0 all checks passed, 1 a check failed, 0 with "SKIP" when
# there is no NVIDIA GPU here (nothing to check). The whole run takes about
# 5-8 minutes with DUR=20 and vLLM (three server starts); it prints its
# elapsed time.
set -euo pipefail
T0=$(date +%s)

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

# --cupti needs a CUDA toolkit (CUPTI's headers and libcupti) and a C
# compiler: probe once, so both --cupti runs below are skipped with the
# reason when they cannot run.
CUPTI_OK=1
if ! "$WORK/llmprof" record -o "$WORK/cupti-probe.llmprof" --cupti --no-nvml --otlp-quiet 0s -- true \
	>"$WORK/cupti-probe.log" 2>&1; then
	CUPTI_OK=
	CUPTI_WHY=$(grep -m1 'record:' "$WORK/cupti-probe.log" || tail -1 "$WORK/cupti-probe.log")
	echo "(--cupti cannot run here: $CUPTI_WHY)"
fi

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

	echo
	echo "== --cupti: matmul throughput recorded with llmprof's CUPTI injection library / bare"
	if [[ -z "$CUPTI_OK" ]]; then
		echo "(--cupti not measured: $CUPTI_WHY)"
	elif "$WORK/llmprof" record -o "$WORK/mm-cupti.llmprof" --cupti --no-nvml --tail 0s --otlp-quiet 0s \
		-- python3 "$WORK/mm.py" "$DUR" >"$WORK/mm-cupti.out" 2>"$WORK/mm-cupti.log"; then
		cupti=$(tail -1 "$WORK/mm-cupti.out")
		awk -v b="$bare" -v r="$cupti" 'BEGIN { printf "bare %.1f matmul/s, --cupti %.1f matmul/s, ratio %.4f\n", b, r, r / b }'
		du -sh "$WORK/mm-cupti.llmprof/cupti" | awk '{ print "activity files: " $1 }'
		"$WORK/recordgpu" -cupti "$WORK/mm-cupti.llmprof" || status=1
	else
		echo "record --cupti failed:"
		tail -20 "$WORK/mm-cupti.log"
		status=1
	fi
else
	echo
	echo "(python3 with CUDA torch not found: GPU-workload overhead not measured)"
fi

# --torch-profiler: the same fixed load against vLLM run bare and recorded
# with its PyTorch profiler on from the first request; the ratio of request
# throughput (and of p50 latency) is the profiler's overhead on the server.
# VLLM_MODEL must be in the local Hugging Face cache (nothing is downloaded).
VLLM_MODEL=${VLLM_MODEL:-facebook/opt-125m}
if python3 -c 'import vllm' 2>/dev/null && python3 -c "
import sys
from huggingface_hub import try_to_load_from_cache
sys.exit(0 if isinstance(try_to_load_from_cache('$VLLM_MODEL', 'config.json'), str) else 1)" 2>/dev/null; then
	echo
	echo "== --torch-profiler: vLLM ($VLLM_MODEL), 256 requests, 16 at a time: profiled / bare"
	PORT=${VLLM_PORT:-18123}
	cat >"$WORK/load.py" <<'PY'
import json, sys, threading, time, urllib.request
url, model, n, conc = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
lat, lock, idx = [], threading.Lock(), [0]
def worker():
    while True:
        with lock:
            if idx[0] >= n: return
            idx[0] += 1
        body = json.dumps({"model": model, "prompt": "The history of computing is", "max_tokens": 64, "temperature": 0}).encode()
        t = time.perf_counter()
        urllib.request.urlopen(urllib.request.Request(url + "/v1/completions", body, {"Content-Type": "application/json"}), timeout=300).read()
        with lock: lat.append(time.perf_counter() - t)
t0 = time.perf_counter()
ts = [threading.Thread(target=worker) for _ in range(conc)]
[t.start() for t in ts]; [t.join() for t in ts]
wall = time.perf_counter() - t0
lat.sort()
print(f"{n / wall:.3f} {lat[len(lat) // 2] * 1000:.1f}")
PY
	wait_ready() { # wait_ready PID: until /health answers, PID has exited, or 5 min
		for _ in $(seq 600); do
			curl -sf "http://127.0.0.1:$PORT/health" >/dev/null 2>&1 && return 0
			kill -0 "$1" 2>/dev/null || return 1
			sleep 0.5
		done
		return 1
	}
	serve=(vllm serve "$VLLM_MODEL" --port "$PORT" --enforce-eager --gpu-memory-utilization 0.5)
	"${serve[@]}" >"$WORK/vllm-bare.log" 2>&1 &
	pid=$!
	wait_ready $pid || { echo "vLLM did not become ready:"; tail -20 "$WORK/vllm-bare.log"; kill -INT $pid; exit 1; }
	bare=$(python3 "$WORK/load.py" "http://127.0.0.1:$PORT" "$VLLM_MODEL" 256 16)
	kill -INT $pid; wait $pid || true
	"$WORK/llmprof" record -o "$WORK/torch.llmprof" --torch-profiler --profile-flush-timeout 5m --otlp-quiet 0s \
		-- "${serve[@]}" >"$WORK/vllm-torch.log" 2>&1 &
	pid=$!
	wait_ready $pid || { echo "vLLM under record did not become ready:"; tail -20 "$WORK/vllm-torch.log"; kill -INT $pid; exit 1; }
	prof=$(python3 "$WORK/load.py" "http://127.0.0.1:$PORT" "$VLLM_MODEL" 256 16)
	t0=$(date +%s)
	kill -INT $pid; wait $pid || true
	echo "stop, trace flush and shutdown took $(($(date +%s) - t0)) s"
	ratios() { # ratios NAME BARE PROFILED
		awk -v n="$1" -v b="$2" -v p="$3" 'BEGIN { split(b, x, " "); split(p, y, " ");
		printf "bare %.2f req/s p50 %.0f ms; %s %.2f req/s p50 %.0f ms; throughput ratio %.3f, p50 ratio %.3f\n",
		x[1], x[2], n, y[1], y[2], y[1] / x[1], y[2] / x[2] }'
	}
	ratios --torch-profiler "$bare" "$prof"
	python3 - "$WORK/torch.llmprof/manifest.json" <<'PY' || status=1
import json, sys
t = json.load(open(sys.argv[1]))["external"].get("torch") or {}
files = t.get("files", [])
print(f"traces: {len(files)}, complete: {sum(f['complete'] for f in files)}, trigger: {t.get('trigger')}, error: {t.get('error', '')}")
sys.exit(0 if files and all(f["complete"] for f in files) and not t.get("error") else 1)
PY
	"$WORK/llmprof" analyze "$WORK/torch.llmprof" >"$WORK/torch.analyze" 2>&1 || status=1
	grep -i -m3 "gpu" "$WORK/torch.analyze" || true

	echo
	echo "== --cupti: vLLM ($VLLM_MODEL), the same load: recorded with llmprof's CUPTI library / bare"
	if [[ -z "$CUPTI_OK" ]]; then
		echo "(--cupti not measured: $CUPTI_WHY)"
	else
		"$WORK/llmprof" record -o "$WORK/vllm-cupti.llmprof" --cupti --otlp-quiet 0s \
			-- "${serve[@]}" >"$WORK/vllm-cupti.log" 2>&1 &
		pid=$!
	fi
	if [[ -z "$CUPTI_OK" ]]; then
		:
	elif wait_ready $pid; then
		cupti=$(python3 "$WORK/load.py" "http://127.0.0.1:$PORT" "$VLLM_MODEL" 256 16)
		t0=$(date +%s)
		kill -INT $pid; wait $pid || true
		echo "stop, final flushes and shutdown took $(($(date +%s) - t0)) s"
		ratios --cupti "$bare" "$cupti"
		du -sh "$WORK/vllm-cupti.llmprof/cupti" | awk '{ print "activity files: " $1 }'
		"$WORK/recordgpu" -cupti "$WORK/vllm-cupti.llmprof" || status=1
	else
		echo "vLLM under record --cupti did not become ready:"
		tail -20 "$WORK/vllm-cupti.log"
		kill -INT $pid 2>/dev/null || true
		wait $pid || true
		status=1
	fi
else
	echo
	echo "(vllm or the model $VLLM_MODEL not found locally: --torch-profiler overhead not measured)"
fi
echo
echo "elapsed $(($(date +%s) - T0)) s"
exit $status
