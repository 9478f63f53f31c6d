#!/usr/bin/env bash
# bench/cgroup.sh LIMIT COMMAND... — runs COMMAND under a hard memory limit
# (a cgroup of its own: LIMIT bytes, or with a K, M or G suffix), the way a
# container or a CI runner would, and says whether the kernel killed it.
# Unlike --memory-limit, which only paces llmprof's collector, the cgroup's
# limit counts the page cache too and kills the process when what it holds
# cannot be reclaimed: the test of what spilling (internal/spill) is for.
#
# Prints "exit N, peak RSS X MB, cgroup peak Y MB (page cache included)";
# exit status is COMMAND's (137 when the kernel killed it).
#
# Needs root and a writable memory cgroup: cgroup v2 (memory.max) or v1
# (memory.limit_in_bytes), below this shell's own cgroup.
set -euo pipefail
[ $# -ge 2 ] || { echo "usage: bench/cgroup.sh LIMIT COMMAND..." >&2; exit 2; }
limit=$1
shift
case $limit in
*[Gg]) bytes=$(( ${limit%?} * 1024 * 1024 * 1024 )) ;;
*[Mm]) bytes=$(( ${limit%?} * 1024 * 1024 )) ;;
*[Kk]) bytes=$(( ${limit%?} * 1024 )) ;;
*) bytes=$limit ;;
esac
if [ -f /sys/fs/cgroup/cgroup.controllers ]; then
	parent=/sys/fs/cgroup$(awk -F: '$1 == "0" { print $3 }' /proc/self/cgroup)
	max=memory.max peakf=memory.peak
else
	parent=/sys/fs/cgroup/memory$(awk -F: '$2 == "memory" { print $3 }' /proc/self/cgroup)
	max=memory.limit_in_bytes peakf=memory.max_usage_in_bytes
fi
cg="$parent/llmprof-bench-$$"
mkdir "$cg" || { echo "bench/cgroup.sh: cannot make a cgroup under $parent (root and a writable memory cgroup are needed)" >&2; exit 2; }
trap 'rmdir "$cg" 2> /dev/null || true' EXIT
# cgroup v2 gives a child memory.max only when the parent delegates the
# memory controller (memory in its cgroup.subtree_control), which a cgroup
# holding processes, such as this shell's, cannot do: without the file the
# limit would not be set at all.
[ -f "$cg/$max" ] || {
	echo "bench/cgroup.sh: $parent does not delegate the memory controller, so $cg has no $max; run from a cgroup that does (or a systemd scope: systemd-run --scope -p MemoryMax=$limit COMMAND)" >&2
	exit 2
}
echo "$bytes" > "$cg/$max"
# v1: no swap for the group either, where the kernel accounts it.
[ -f "$cg/memory.memsw.limit_in_bytes" ] && echo "$bytes" > "$cg/memory.memsw.limit_in_bytes" 2> /dev/null || true
tmp=$(mktemp)
rc=0
sh -c 'echo $$ > "$1/cgroup.procs"; shift; exec /usr/bin/time -f "%M" -o "$0" "$@"' "$tmp" "$cg" "$@" || rc=$?
rss=$(tail -n 1 "$tmp" 2> /dev/null || echo 0)
rm -f "$tmp"
[[ $rss =~ ^[0-9]+$ ]] || rss=0
# memory.peak is in cgroup v2 from Linux 5.19 on.
peak=$(cat "$cg/$peakf" 2> /dev/null || true)
[[ $peak =~ ^[0-9]+$ ]] && peak="$((peak / 1048576)) MB" || peak="unknown (no $peakf)"
echo "exit $rc, peak RSS $((rss / 1024)) MB, cgroup peak $peak (page cache included), limit $((bytes / 1048576)) MB" >&2
exit $rc
