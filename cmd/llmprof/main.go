// Command llmprof attributes LLM inference latency offline: it reads OTLP
// trace dumps, Nsight Systems SQLite exports and llmprof captures, puts them on
// one clock and says where each request's and each token's time went.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/llmprof/llmprof/internal/iostreams"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := Main(ctx, os.Args[1:], iostreams.System())
	stop()
	os.Exit(code)
}
