package main

import (
	"context"
	"strings"

	"github.com/spf13/cobra"
)

// Factory carries what every command needs: streams and the decoders that
// Open may use. Tests build their own.
type Factory struct {
	IO *IOStreams
}

// NewCmdRoot builds the command tree.
func NewCmdRoot(f *Factory) *cobra.Command {
	root := &cobra.Command{
		Use:   "llmprof <command>",
		Short: "Offline latency attribution for LLM inference",
		Long: strings.TrimSpace(`
llmprof reads what inference stacks already produce — OTLP trace dumps (vLLM,
SGLang, TGI, Triton, OpenTelemetry GenAI), Nsight Systems SQLite exports and
llmprof's own captures — puts them on one clock, and says where each request's
and each token's latency went: queue, prefill, decode, GPU kernel categories,
idle gaps and other tenants.`),
		SilenceUsage:  true,
		SilenceErrors: true,
		Example: strings.TrimSpace(`
  llmprof demo ./run                      write a synthetic multi-tenant run
  llmprof analyze ./run                   where did the time go?
  llmprof analyze --format json trace.jsonl > report.json
  llmprof diff baseline.json candidate.jsonl --gate 'ttft.p99<+10%'`),
	}
	root.SetOut(f.IO.Out)
	root.SetErr(f.IO.ErrOut)
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return &UsageError{err} })
	root.CompletionOptions.HiddenDefaultCmd = true
	for _, add := range commands {
		root.AddCommand(add(f))
	}
	return root
}

// commands lists the subcommand constructors; each lives in its own file.
var commands = []func(*Factory) *cobra.Command{
	NewCmdAnalyze,
	NewCmdDemo,
	NewCmdTenants,
	NewCmdExport,
	NewCmdVersion,
	NewCmdDiff,
	NewCmdStats,
	NewCmdRecord,
}

// Main runs llmprof with the given arguments and returns the exit code.
func Main(ctx context.Context, args []string, io *IOStreams) int {
	f := &Factory{IO: io}
	root := NewCmdRoot(f)
	root.SetArgs(args)
	_, err := root.ExecuteContextC(ctx)
	if err != nil && isCobraUsageError(err) {
		err = &UsageError{err}
	}
	return exitCode(err, io.ErrOut)
}

// isCobraUsageError recognizes the errors cobra returns for unknown commands
// and wrong argument counts, which it does not type.
func isCobraUsageError(err error) bool {
	msg := err.Error()
	for _, p := range []string{"unknown command", "unknown flag", "unknown shorthand", "accepts ", "requires at least", "requires at most", "received ", "invalid argument"} {
		if strings.Contains(msg, p) {
			return true
		}
	}
	return false
}
