// Package duckdbtest reads `llmprof export --parquet` output back with
// DuckDB and runs the example queries of docs/fleet.md on it. It is a module
// of its own so that the DuckDB driver (cgo, a large static library) stays
// out of llmprof's module and binary; .ci/run runs its tests.
package duckdbtest
