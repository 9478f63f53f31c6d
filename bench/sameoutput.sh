#!/usr/bin/env bash
# bench/sameoutput.sh REV — does the working tree's llmprof write the same
# bytes as REV's? The check every speed or memory change must pass
# ("byte-identical on real files and generated runs").
#
# Builds llmprof from REV (git archive) and from the working tree, generates
# five demo runs with REV's build (plain, CUDA graphs, Kineto traces,
# infrastructure metrics, vllm-server spans as framed protobuf), then runs
# both builds on every real input under the shared test data (nsys, Kineto,
# OTLP), the five runs and testdata/demo:
#   analyze --format json, tenants --format json
# on every nsys export among them (the runs' included):
#   stats REPORT for each of nsys stats' reports (cuda_gpu_kern_sum, …)
# and on three of the runs and one real nsys export:
#   export --parquet (each table file), export --perfetto
# and diff --format json on five pairs of different runs (three generated,
# two real vllm bench results), comparing stdout, the exit code and every file written. Prints each
# difference and the count; exits 1 if any output differs.
#
# Environment: LLMPROF_SHARED (the shared data, default ../shared).
# Needs go and git.
set -euo pipefail
cd "$(dirname "$0")/.."
[ $# -eq 1 ] || { echo "usage: bench/sameoutput.sh REV" >&2; exit 2; }
rev=$1
shared=${LLMPROF_SHARED:-../shared}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir "$tmp/base"
git archive "$rev" | tar -x -C "$tmp/base"
(cd "$tmp/base" && go build -o "$tmp/old" ./cmd/llmprof)
go build -o "$tmp/new" ./cmd/llmprof
old=$tmp/old new=$tmp/new

runs=$tmp/runs
mkdir "$runs"
"$old" demo --duration 8s "$runs/plain" >/dev/null 2>&1
"$old" demo --duration 8s --cuda-graphs --seed 3 "$runs/graphs" >/dev/null 2>&1
"$old" demo --duration 8s --kineto --seed 5 "$runs/kineto" >/dev/null 2>&1
"$old" demo --duration 8s --metrics --seed 7 "$runs/metrics" >/dev/null 2>&1
"$old" demo --duration 6s --encoding proto-framed --style vllm-server --seed 9 "$runs/vllm-server" >/dev/null 2>&1

inputs=()
if [ -d "$shared/testdata" ]; then
	inputs+=("$shared"/testdata/nsys/*.sqlite "$shared"/testdata/kineto/*.gz "$shared"/testdata/otlp/*)
else
	echo "bench/sameoutput.sh: no $shared/testdata (set LLMPROF_SHARED): generated runs only" >&2
fi
inputs+=("$runs"/* testdata/demo)

n=0 differ=0
same() { # label: compares $tmp/a.* with $tmp/b.*
	n=$((n + 1))
	if ! cmp -s "$tmp/a.out" "$tmp/b.out" || ! cmp -s "$tmp/a.rc" "$tmp/b.rc"; then
		echo "DIFFERS: $1"
		differ=$((differ + 1))
	fi
}
# check LABEL COMMAND...: runs the command with each build, compares.
check() {
	local label=$1
	shift
	{ "$old" "$@" >"$tmp/a.out" 2>/dev/null; echo $? >"$tmp/a.rc"; } || true
	{ "$new" "$@" >"$tmp/b.out" 2>/dev/null; echo $? >"$tmp/b.rc"; } || true
	same "$label"
}
reports=(cuda_api_sum cuda_gpu_kern_sum cuda_gpu_mem_time_sum cuda_gpu_mem_size_sum cuda_kern_exec_sum nvtx_sum nvtx_kern_sum nvtx_gpu_proj_trace)
for in in "${inputs[@]}"; do
	check "analyze $in" analyze --format json "$in"
	check "tenants $in" tenants --format json "$in"
	nsys=()
	if [[ $in == *.sqlite ]]; then
		nsys=("$in")
	elif [ -f "$in/gpu.nsys.sqlite" ]; then
		nsys=("$in/gpu.nsys.sqlite")
	fi
	for f in "${nsys[@]}"; do
		for r in "${reports[@]}"; do
			check "stats $r $f" stats --format json "$r" "$f"
		done
	done
done
exports=("$runs/plain" "$runs/graphs" "$runs/kineto")
[ -d "$shared/testdata" ] && exports+=("$(ls "$shared"/testdata/nsys/*.sqlite | head -1)")
for in in "${exports[@]}"; do
	rm -rf "$tmp/pa" "$tmp/pb"
	"$old" export --parquet "$tmp/pa" "$in" >/dev/null 2>&1 || true
	"$new" export --parquet "$tmp/pb" "$in" >/dev/null 2>&1 || true
	for f in "$tmp"/pa/*; do
		n=$((n + 1))
		cmp -s "$f" "$tmp/pb/$(basename "$f")" || { echo "DIFFERS: export --parquet $in: $(basename "$f")"; differ=$((differ + 1)); }
	done
	"$old" export --perfetto "$tmp/a.out" "$in" >/dev/null 2>&1 || true
	"$new" export --perfetto "$tmp/b.out" "$in" >/dev/null 2>&1 || true
	echo 0 >"$tmp/a.rc"
	echo 0 >"$tmp/b.rc"
	same "export --perfetto $in"
done
# diff --format json: compare's statistics (bootstraps, Hodges-Lehmann,
# kernels) on pairs of different runs, simulated and real.
pairs=("$runs/plain $runs/metrics" "testdata/demo $runs/plain" "$runs/graphs $runs/kineto")
if [ -d "$shared/testdata" ]; then
	bench=("$shared"/testdata/vllm-bench/*-serving_*.json)
	pairs+=("${bench[1]} ${bench[2]}" "${bench[2]} ${bench[3]}")
fi
for p in "${pairs[@]}"; do
	# shellcheck disable=SC2086 # two paths, split on purpose
	check "diff $p" diff --format json $p
done
echo "$n outputs compared against $rev, $differ differ"
[ "$differ" -eq 0 ]
