package main

import (
	"context"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/llmprof/llmprof/internal/iostreams"
)

// IOStreams are the commands' streams (internal/iostreams).
type IOStreams = iostreams.IOStreams

// writeFileAtomic writes an output file the user named, atomically when it
// is a file (iostreams.WriteFile).
var writeFileAtomic = iostreams.WriteFile

// Factory carries what every command needs: its streams. Tests build
// their own.
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
		Example: examples(`
  llmprof demo ./run                      write a synthetic multi-tenant run
  llmprof analyze ./run                   where did the time go?
  llmprof analyze --format json trace.jsonl > report.json
  llmprof diff baseline.json candidate.jsonl --gate 'ttft.p99<+10%'`),
	}
	root.SetOut(f.IO.Out)
	root.SetErr(f.IO.ErrOut)
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return &UsageError{err} })
	root.CompletionOptions.HiddenDefaultCmd = true
	root.SuggestionsMinimumDistance = 2
	// With Args set, cobra hands unknown words to the root instead of
	// returning its own untyped "unknown command" error.
	root.Args = func(cmd *cobra.Command, args []string) error {
		if len(args) == 0 {
			return nil
		}
		msg := fmt.Sprintf("unknown command %q for %q", args[0], cmd.CommandPath())
		if s := cmd.SuggestionsFor(args[0]); len(s) > 0 {
			msg += "; did you mean " + strings.Join(s, " or ") + "?"
		}
		return usageErrorf("%s", msg)
	}
	root.RunE = func(cmd *cobra.Command, _ []string) error { return cmd.Help() }
	for _, add := range commands {
		root.AddCommand(typedArgs(add(f)))
	}
	return root
}

// typedArgs makes the argument-count errors of cmd and its subcommands
// usage errors where they arise, so that the exit code never depends on the
// wording of an error.
func typedArgs(cmd *cobra.Command) *cobra.Command {
	if check := cmd.Args; check != nil {
		cmd.Args = func(c *cobra.Command, args []string) error {
			if err := check(c, args); err != nil {
				return &UsageError{err}
			}
			return nil
		}
	}
	for _, sub := range cmd.Commands() {
		typedArgs(sub)
	}
	return cmd
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
	NewCmdHistory,
}

// Main runs llmprof with the given arguments and returns the exit code.
func Main(ctx context.Context, args []string, io *IOStreams) int {
	io, flush := io.TerminalSafe()
	defer flush()
	f := &Factory{IO: io}
	root := NewCmdRoot(f)
	root.SetArgs(args)
	_, err := root.ExecuteContextC(ctx)
	return exitCode(err, io.ErrOut)
}

// examples formats a command's Example text: cobra prints it as it is, so
// only the surrounding blank lines go (TrimSpace would also take the first
// line's indent, and the first example would stand out of line).
func examples(s string) string { return strings.Trim(s, "\n") }

// argsNamed is a cobra.PositionalArgs that names what is missing: at least
// min and, when max ≥ 0, at most max arguments, described by what ("an
// <input> (a file, a directory, or - for stdin)").
func argsNamed(min, max int, what string) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		switch {
		case len(args) < min:
			return usageErrorf("%s: missing %s; see '%s --help'", cmd.Name(), what, cmd.CommandPath())
		case max >= 0 && len(args) > max:
			return usageErrorf("%s: takes at most %d argument(s) (%s), got %d: %q", cmd.Name(), max, what, len(args), args)
		}
		return nil
	}
}
