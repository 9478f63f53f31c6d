// Command otlpclient is internal/otlpclient's test workload as a program of
// its own (for LLMPROF_TEST_BINDIR; cmd/llmprof's tests run it inside their
// own binary).
package main

import (
	"os"

	"github.com/llmprof/llmprof/internal/otlpclient"
)

func main() { otlpclient.Main(os.Args[1:]) }
