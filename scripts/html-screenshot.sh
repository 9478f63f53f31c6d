#!/usr/bin/env bash
# Renders `llmprof analyze --format html` of a run in headless Chromium and
# saves a full-page screenshot, printing the page's size and how long the
# browser took (load to screenshot) and the page's own script (navigation
# start to the end of html.js, the data-render-ms marker).
#
#   scripts/html-screenshot.sh [RUN_DIR_OR_FILES...]   (default: testdata/demo)
#
# Output: report.html and report.png in $OUT (default: a temporary folder).
set -euo pipefail
cd "$(dirname "$0")/.."
inputs=("$@")
[ ${#inputs[@]} -gt 0 ] || inputs=(testdata/demo)
out=${OUT:-$(mktemp -d)}
mkdir -p "$out"
chromium=${LLMPROF_CHROMIUM:-$(command -v chromium || command -v chromium-browser || command -v google-chrome || true)}
[ -n "$chromium" ] || { echo "no chromium on PATH (apt-get install chromium)" >&2; exit 1; }
profile=$(mktemp -d)
trap 'rm -rf "$profile"' EXIT
flags=(--headless --no-sandbox --disable-gpu --no-first-run --user-data-dir="$profile")

go run ./cmd/llmprof analyze --format html -o "$out/report.html" "${inputs[@]}"
bytes=$(wc -c <"$out/report.html")
# Reference: the same browser loading an empty page, so that the report's
# own cost is the difference (browser start-up dominates on a small machine).
echo '<!DOCTYPE html><html><body></body></html>' >"$out/blank.html"
t0=$(date +%s%N)
"$chromium" "${flags[@]}" --dump-dom "file://$(realpath "$out/blank.html")" >/dev/null 2>&1
t1=$(date +%s%N)
dom=$("$chromium" "${flags[@]}" --dump-dom "file://$(realpath "$out/report.html")" 2>/dev/null)
t2=$(date +%s%N)
script_ms=$(grep -o 'data-render-ms="[0-9]*"' <<<"$dom" | grep -o '[0-9]*' || echo "?")
charts=$(grep -o 'data-charts="[0-9]*"' <<<"$dom" | grep -o '[0-9]*' || echo 0)
"$chromium" "${flags[@]}" --hide-scrollbars --window-size=1280,8000 --screenshot="$out/report.png" "file://$(realpath "$out/report.html")" >/dev/null 2>&1
awk -v b="$bytes" -v c="$charts" -v blank=$(((t1 - t0) / 1000000)) -v rep=$(((t2 - t1) / 1000000)) -v s="$script_ms" 'BEGIN {
  printf "report %d bytes, %d charts; chromium: blank page %d ms, report %d ms (%.2fx; +%d ms); page script done at %s ms\n", b, c, blank, rep, rep / blank, rep - blank, s }'
echo "wrote $out/report.html and $out/report.png"
