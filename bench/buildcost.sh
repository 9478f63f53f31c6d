#!/usr/bin/env bash
# bench/buildcost.sh — what a cold `go build ./cmd/llmprof` costs, by package.
#
# Builds with an empty build cache (modules must be downloaded already:
# `go mod download`), bench/buildcost recording the user+sys CPU of every
# compile and the link, and prints the total, the CPU by module, the largest
# packages, and for each prefix in BUILDCOST_ONLY what the packages that only
# it brings in cost (what dropping that dependency would save).
# On 2 idle cores the wall time is about half the CPU time at best: the
# largest packages compile on one core each.
set -euo pipefail
cd "$(dirname "$0")/.."
only=${BUILDCOST_ONLY:-github.com/apache/arrow-go,github.com/goccy/go-json,github.com/llmprof/llmprof/export,modernc.org,go.opentelemetry.io,google.golang.org/grpc,gonum.org}
bin=$(mktemp -d)/buildcost
go build -o "$bin" ./bench/buildcost
"$bin" -only "$only" ./cmd/llmprof
