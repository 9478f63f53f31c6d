#!/usr/bin/env bash
# bench/otlp.sh — the OTLP decoder's speed and memory figures (docs/otlp.md).
#
# 1. go test -bench BenchmarkDecode -cpu 1 on a synthetic dump of realistic
#    LLM spans (≥ 100 MB of framed protobuf, and the same batches as JSON
#    Lines), decoding the same bytes with llmprof and with the OpenTelemetry
#    Collector's pdata unmarshalers, one core; prints the ratios.
# 2. bench/otlpmem: writes the dump to files and decodes each in a fresh
#    process the way llmprof reads input (ingest.Open), reporting peak RSS
#    against the file size.
#
# bench/otlp.sh analyze — instead, in one run: the whole `llmprof analyze
#    --format json` of an OTLP file (framed protobuf and JSON Lines, written
#    by bench/otlpmem gen) against the Collector's pdata decoding the same
#    file alone (bench/otlpanalyze pdata: read, unmarshal every payload), each
#    in a fresh process, best of BENCHCOUNT runs; prints CPU time (user +
#    system) and wall time, and their ratios. The goal (docs/otlp.md): analyze
#    within 1.0–1.2× pdata's decode alone.
#    With BENCH_BASE=REV, instead: REV's llmprof (git archive), this tree's
#    and pdata, one after the other in each of BENCHCOUNT rounds (the three
#    meet the same load), CPU time to the microsecond (otlpanalyze
#    cputime); prints each one's minimum and median and their ratios.
#
# Environment: LLMPROF_BENCH_MB (size of the protobuf dump, default 100),
# BENCHTIME (go test -benchtime, default 5x), BENCHCOUNT (go test -count,
# default 3; the table keeps each figure's best run, the one least disturbed
# by whatever else the machine was doing).
set -euo pipefail
cd "$(dirname "$0")/.."

mb=${LLMPROF_BENCH_MB:-100}
benchtime=${BENCHTIME:-5x}
count=${BENCHCOUNT:-3}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

if [[ ${1:-} == analyze ]]; then
	. bench/lib.sh
	go build -o "$work/llmprof" ./cmd/llmprof
	settle "$work/llmprof"
	go build -o "$work/otlpmem" ./bench/otlpmem
	go build -o "$work/otlpanalyze" ./bench/otlpanalyze
	"$work/otlpmem" gen -dir "$work" -mb "$mb"
	rm -f "$work/dump-raw.pb" "$work/dump-doc.json"
	if [[ -n ${BENCH_BASE:-} ]]; then
		mkdir "$work/base"
		git archive "$BENCH_BASE" | tar -x -C "$work/base"
		(cd "$work/base" && go build -o "$work/llmprof-base" ./cmd/llmprof)
		settle "$work/llmprof-base"
		printf "\n%-12s %-10s %9s %9s %9s %9s\n" file binary "min cpu" "median" "min ×" "median ×"
		for f in dump.pb dump.jsonl; do
			: >"$work/rounds.txt"
			for _ in $(seq "$count"); do
				for b in base tree pdata; do
					case $b in
					base) c=("$work/llmprof-base" analyze --format json "$work/$f") ;;
					tree) c=("$work/llmprof" analyze --format json "$work/$f") ;;
					pdata) c=("$work/otlpanalyze" pdata "$work/$f") ;;
					esac
					echo "$b $("$work/otlpanalyze" cputime "${c[@]}")" >>"$work/rounds.txt"
				done
			done
			sort -k1,1 -k2,2g "$work/rounds.txt" | awk -v f="$f" -v base="$BENCH_BASE" '
			{ v[$1, ++n[$1]] = $2 }
			END {
				for (b in n) { lo[b] = v[b, 1]; m = n[b]; med[b] = (m % 2) ? v[b, (m + 1) / 2] : (v[b, m / 2] + v[b, m / 2 + 1]) / 2 }
				split("base tree pdata", order, " ")
				for (i = 1; i <= 3; i++) {
					b = order[i]; name = (b == "base") ? base : b
					printf "%-12s %-10s %8.3fs %8.3fs %8.2f× %8.2f×\n", f, substr(name, 1, 10), lo[b], med[b], lo[b] / lo["pdata"], med[b] / med["pdata"]
				}
			}'
		done
		echo "(cpu: user + system seconds of the whole process; $count rounds of $BENCH_BASE's llmprof, this tree's and pdata, one after the other; ×: against pdata's decode alone)"
		exit 0
	fi
	# best name command...: "cpu_s wall_s maxrss_kib" of the run with the least CPU time.
	best() {
		local out=$1 line="" cpu
		shift
		for _ in $(seq "$count"); do
			/usr/bin/time -f "%U %S %e %M" -o "$work/time.txt" "$@" >"$work/out.txt" 2>/dev/null
			read -r u s e kb <"$work/time.txt"
			cpu=$(awk -v u="$u" -v s="$s" 'BEGIN { printf "%.2f", u + s }')
			if [[ -z $line ]] || awk -v a="$cpu" -v b="${line%% *}" 'BEGIN { exit !(a < b) }'; then line="$cpu $e $kb"; fi
		done
		echo "$line" >"$out"
	}
	printf "\n%-12s %9s %11s %11s %9s %9s %9s %8s\n" file MiB "analyze cpu" "pdata cpu" "cpu ×" "wall ×" "RSS MiB" "pdata"
	for f in dump.pb dump.jsonl; do
		best "$work/a.txt" "$work/llmprof" analyze --format json "$work/$f"
		best "$work/p.txt" "$work/otlpanalyze" pdata "$work/$f"
		read -r acpu awall akb <"$work/a.txt"
		read -r pcpu pwall pkb <"$work/p.txt"
		awk -v f="$f" -v size="$(stat -c %s "$work/$f")" -v ac="$acpu" -v aw="$awall" -v ak="$akb" -v pc="$pcpu" -v pw="$pwall" -v pk="$pkb" 'BEGIN {
			printf "%-12s %9.1f %10.2fs %10.2fs %8.2f× %8.2f× %9d %8d\n", f, size / 1048576, ac, pc, (pc > 0 ? ac / pc : 0), (pw > 0 ? aw / pw : 0), ak / 1024, pk / 1024
		}'
	done
	echo "(cpu: user + system seconds of the whole process, best of $count; wall: the same run's elapsed time; RSS: its peak, analyze then pdata)"
	exit 0
fi

echo "== speed: go test -bench BenchmarkDecode -cpu 1 -benchtime $benchtime -count $count (dump: $mb MiB of protobuf)"
LLMPROF_BENCH_MB=$mb go test -run '^$' -bench '^BenchmarkDecode$' -benchtime "$benchtime" -count "$count" -cpu 1 ./ingest/otlp | tee "$work/bench.txt"

awk '
/^BenchmarkDecode\// {
	name = $1; sub(/^BenchmarkDecode\//, "", name); sub(/-[0-9]+$/, "", name)
	for (i = 3; i < NF; i += 2) if ($i > v[name, $(i + 1)]) v[name, $(i + 1)] = $i
	if (!(name in seen)) { seen[name] = 1; names[++n] = name }
}
function ratio(a, b, unit) { return (v[b, unit] > 0) ? sprintf("%.2f", v[a, unit] / v[b, unit]) : "n/a" }
END {
	printf "\n%-28s %10s %12s %10s %13s\n", "decoder", "MB/s", "spans/s", "MB/cpu-s", "spans/cpu-s"
	for (k = 1; k <= n; k++) {
		m = names[k]
		printf "%-28s %10.1f %12.0f %10.1f %13.0f\n", m, v[m, "MB/s"], v[m, "spans/s"], v[m, "MB/cpu-s"], v[m, "spans/cpu-s"]
	}
	printf "\nratios against pdata on the same bytes (wall clock; CPU time):\n"
	printf "  protobuf, framed file     %s×  %s×\n", ratio("proto/llmprof-framed-file", "proto/pdata", "MB/s"), ratio("proto/llmprof-framed-file", "proto/pdata", "MB/cpu-s")
	printf "  protobuf, per payload     %s×  %s×\n", ratio("proto/llmprof", "proto/pdata", "MB/s"), ratio("proto/llmprof", "proto/pdata", "MB/cpu-s")
	printf "  JSON Lines                %s×  %s×\n", ratio("jsonl/llmprof", "jsonl/pdata", "MB/s"), ratio("jsonl/llmprof", "jsonl/pdata", "MB/cpu-s")
	printf "\nbudget (per core): protobuf >= 1000000 spans/s: %.0f spans/s (%.0f per CPU-second); JSON Lines >= 200 MB/s: %.1f MB/s (%.1f per CPU-second)\n",
		v["proto/llmprof-framed-file", "spans/s"], v["proto/llmprof-framed-file", "spans/cpu-s"], v["jsonl/llmprof", "MB/s"], v["jsonl/llmprof", "MB/cpu-s"]
}' "$work/bench.txt"

echo
echo "== memory: peak RSS of decoding each file in a fresh process (ingest.Open: decode and Validate)"
go build -o "$work/otlpmem" ./bench/otlpmem
"$work/otlpmem" gen -dir "$work" -mb "$mb"
for f in dump.pb dump-raw.pb dump.jsonl dump-doc.json; do
	/usr/bin/time -v "$work/otlpmem" decode "$work/$f" 2>"$work/time.txt"
	awk -v f="$f" '/Maximum resident set size/ { printf "  %s: /usr/bin/time max RSS %d MiB\n", f, $NF / 1024 }' "$work/time.txt"
done
