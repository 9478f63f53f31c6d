#!/usr/bin/env bash
# bench/scale.sh — how llmprof's time and memory grow with the input (issue 26).
#
# Generates simulated runs of growing length once (llmprof demo: OTLP framed
# protobuf + an nsys export of the whole run, decode steps as CUDA graphs),
# then for each size times, in fresh processes on the same warm files:
#   analyze DIR                        decode, align, attribute, tenants
#   tenants DIR                        the same without the GPU section and tokens
#   diff DIR REPLAY                    the run against its replay (same --seed,
#                                      another --noise-seed), both analyzed
#   export --parquet OUT DIR           the tables (no tenant fit)
#   stats cuda_gpu_kern_sum NSYS       the nsys kernel summary alone
#   limited DIR                        analyze --format json under
#                                      --memory-limit BENCH_LIMIT × the input,
#                                      its report compared byte for byte with
#                                      an unlimited run's (not timed); the
#                                      last column is then RSS/limit
# and prints, per command and size, input bytes, GPU ops, wall, CPU
# (user+sys) and peak RSS (GNU time), then per command the least-squares fit
# over the sizes: peak RSS = a + b × input (b: bytes of RSS per input byte,
# the goal is ≤ 1.0), CPU = c + d × GPU ops (d: ns per op), and the growth
# exponent of CPU and RSS (the slope of log against log input: 1.0 is
# linear). With the last size's RSS/input and the goal check.
#
# Environment:
#   BENCH_SIZES     run lengths (default "30s 60s 120s 240s": ~55 MB to
#                   ~430 MB of input); each second of the demo is ~1.7 MB,
#                   so "… 1500s 3000s" reaches 5.2 GB (the 3000 s run takes
#                   ~3 min and ~14 GB of memory to generate)
#   BENCH_COMMANDS  which of analyze tenants diff export stats (default all)
#   BENCH_DIR       where runs go (default /tmp/llmprof-bench-scale)
#   BENCH_FLAGS     extra flags for analyze, tenants, diff and export
#   BENCH_LIMIT     the memory limit of "limited" as a share of the input
#                   (default 0.8)
# Needs go, GNU time (/usr/bin/time), awk.
set -euo pipefail
cd "$(dirname "$0")/.."
sizes=${BENCH_SIZES:-30s 60s 120s 240s}
commands=${BENCH_COMMANDS:-analyze tenants diff export stats}
dir=${BENCH_DIR:-/tmp/llmprof-bench-scale}
flags=${BENCH_FLAGS:-}
limit=${BENCH_LIMIT:-0.8}
[ -x /usr/bin/time ] || { echo "bench/scale.sh: GNU time (/usr/bin/time) is required" >&2; exit 2; }
mkdir -p "$dir"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
bin="$tmp/llmprof"
. bench/lib.sh
go build -o "$bin" ./cmd/llmprof
settle "$bin"

# gen DURATION NOISE → the run's directory, generated once; its GPU op count
# (from the demo's own summary) is kept beside it in ops.txt.
gen() {
	local d="$dir/run-$1-n$2"
	if [ ! -f "$d/gpu.nsys.sqlite" ]; then
		echo "generating $d (once)…" >&2
		rm -rf "$d.tmp"
		"$bin" demo --duration "$1" --nsys "$1" --cuda-graphs --encoding proto-framed --noise-seed "$2" "$d.tmp" > "$tmp/demo.out" 2>&1
		sed -n 's/.*gpu.nsys.sqlite:.* \([0-9][0-9]*\) GPU ops.*/\1/p' "$tmp/demo.out" > "$d.tmp/ops.txt"
		mv "$d.tmp" "$d"
	fi
	echo "$d"
}
bytes() { du -cb "$@" | tail -1 | cut -f1; }

results="$tmp/results" # command size input ops wall cpu rss_bytes
: > "$results"
echo "$(nproc) CPUs, load $(cut -d' ' -f1 /proc/loadavg); llmprof $(git rev-parse --short HEAD 2>/dev/null || echo '?')"
printf '%-8s %-7s %10s %10s %9s %9s %10s %9s\n' command size input "GPU ops" wall CPU "peak RSS" RSS/input
for size in $sizes; do
	run=$(gen "$size" 1)
	ops=$(cat "$run/ops.txt")
	inputs=("$run/trace.otlp.pbf" "$run/gpu.nsys.sqlite")
	for c in $commands; do
		n=$ops
		case $c in
		analyze) in=$(bytes "${inputs[@]}"); cmd=("$bin" analyze $flags "$run") ;;
		tenants) in=$(bytes "${inputs[@]}"); cmd=("$bin" tenants $flags "$run") ;;
		diff)
			replay=$(gen "$size" 2)
			in=$(($(bytes "${inputs[@]}") + $(bytes "$replay/trace.otlp.pbf" "$replay/gpu.nsys.sqlite")))
			n=$((ops + $(cat "$replay/ops.txt")))
			cmd=("$bin" diff $flags "$run" "$replay") ;;
		export)
			rm -rf "$tmp/pq"
			in=$(bytes "${inputs[@]}"); cmd=("$bin" export $flags --parquet "$tmp/pq" "$run") ;;
		stats) in=$(bytes "$run/gpu.nsys.sqlite"); cmd=("$bin" stats cuda_gpu_kern_sum "$run/gpu.nsys.sqlite") ;;
		limited)
			in=$(bytes "${inputs[@]}")
			# %.0f, not %d: mawk's %d stops at 2^31 - 1 (a 5 GB run's
			# limit came out 2.1 GB).
			lim=$(awk -v i="$in" -v f="$limit" 'BEGIN { printf "%.0f", i * f }')
			"$bin" analyze $flags --format json -o "$tmp/free.json" "$run" 2> /dev/null
			cmd=("$bin" analyze $flags --format json -o "$tmp/limited.json" --memory-limit "${lim}B" "$run") ;;
		*) echo "bench/scale.sh: unknown command $c" >&2; exit 2 ;;
		esac
		cat "${inputs[@]}" > /dev/null
		# diff exits 1 on a confident regression: the figures count all the same.
		/usr/bin/time -f "%e %U %S %M" -o "$tmp/time" "${cmd[@]}" > /dev/null 2> "$tmp/err" || {
			rc=$?
			if [ "$c" != diff ] || [ "$rc" -gt 1 ]; then
				echo "bench/scale.sh: $c on $run failed (exit $rc):" >&2
				cat "$tmp/err" >&2
				exit 1
			fi
		}
		# GNU time writes "Command exited with non-zero status N" before the
		# figures when the command fails (diff's exit 1): the figures are the
		# last line.
		read -r wall usr sys kib < <(tail -n 1 "$tmp/time")
		per=$in
		if [ "$c" = limited ]; then
			per=$lim
			if ! cmp -s "$tmp/free.json" "$tmp/limited.json"; then
				echo "bench/scale.sh: analyze under --memory-limit ${lim}B on $run wrote another report than without" >&2
				exit 1
			fi
		fi
		echo "$c $size $in $n $wall $(echo "$usr + $sys" | bc) $((kib * 1024))" >> "$results"
		awk -v c="$c" -v s="$size" -v inb="$in" -v per="$per" -v ops="$n" -v w="$wall" -v u="$usr" -v y="$sys" -v k="$kib" 'BEGIN {
			printf "%-8s %-7s %8.1f MB %10d %7.1f s %7.1f s %7.1f MB %9.2f%s\n", c, s, inb/1e6, ops, w, u+y, k*1024/1e6, k*1024/per, (per != inb ? " of the limit" : "") }'
	done
done

echo
echo "fits over the sizes (least squares; growth exponent: slope of log y on log input, 1.0 = linear)"
printf '%-8s %14s %14s %13s %12s %12s %s\n' command "RSS/input byte" "RSS intercept" "CPU ns/op" "CPU growth" "RSS growth" "last RSS/input (goal ≤ 1.0)"
for c in $commands; do
	# limited: the last column is RSS over the limit, BENCH_LIMIT × input.
	awk -v c="$c" -v f="$limit" '$1 == c {
		n++; x = $3; o = $4; cpu = $6; r = $7
		sx += x; sr += r; sxx += x*x; sxr += x*r
		so += o; sc += cpu; soo += o*o; soc += o*cpu
		lx = log(x); lc = log(cpu > 0 ? cpu : 1e-3); lr = log(r)
		slx += lx; slc += lc; slr += lr; slxx += lx*lx; slxc += lx*lc; slxr += lx*lr
		last = r / (c == "limited" ? x * f : x)
	}
	END {
		if (n < 2) { printf "%-8s (one size: no fit)  last RSS/input %.2f\n", c, last; exit }
		b = (n*sxr - sx*sr) / (n*sxx - sx*sx); a = (sr - b*sx) / n
		d = (n*soc - so*sc) / (n*soo - so*so)
		gc = (n*slxc - slx*slc) / (n*slxx - slx*slx)
		gr = (n*slxr - slx*slr) / (n*slxx - slx*slx)
		printf "%-8s %14.2f %11.1f MB %13.0f %12.2f %12.2f %.2f %s\n", c, b, a/1e6, d*1e9, gc, gr, last, (last <= 1.0 ? "PASS" : "FAIL")
	}' "$results"
done
