package main

import (
	"context"
	"fmt"
	goio "io"
	"os"
	"runtime/debug"
	"strings"

	"github.com/dustin/go-humanize"
	"github.com/spf13/cobra"

	"github.com/llmprof/llmprof/internal/iostreams"
	"github.com/llmprof/llmprof/internal/memlimit"
	"github.com/llmprof/llmprof/internal/progress"
	"github.com/llmprof/llmprof/internal/spill"
)

// IOStreams are the commands' streams (internal/iostreams).
type IOStreams = iostreams.IOStreams

// Factory carries what every command needs: its streams. Tests build
// their own.
type Factory struct {
	IO *IOStreams
	// memory is the budget the command runs under, applied before it runs
	// (restore: the runtime's limit before; applied: whether it was).
	memory  memlimit.Setting
	restore int64
	applied bool
	// unspill ends spilling (internal/spill) once the command is done;
	// spillOff says why there is none, when there is none.
	unspill  func()
	spillOff error
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
	var memory string
	root.PersistentFlags().StringVar(&memory, "memory-limit", "", fmt.Sprintf(
		"soft limit on llmprof's memory: `SIZE` such as 4GiB or 512MB, or a share of the memory it may use (the container's cgroup limit or the RAM) such as 60%%; 0 for none (default GOMEMLIMIT when set, else %d%%). Past the smaller of it and the input's size, GPU ops, CUDA API calls and spans go to a spill file in $TMPDIR (Linux)", memlimit.DefaultPercent))
	root.PersistentPreRunE = func(cmd *cobra.Command, _ []string) error {
		flag := cmd.Flags().Lookup("memory-limit")
		var lim memlimit.Limit
		if flag != nil && flag.Changed {
			var err error
			if lim, err = memlimit.Parse(memory); err != nil {
				return usageErrorf("--memory-limit: %v", err)
			}
		}
		set, err := memlimit.Resolve(lim, flag != nil && flag.Changed, os.Getenv, memlimit.System())
		if err != nil {
			return &UsageError{err}
		}
		f.memory, f.restore, f.applied = set, set.Apply(), true
		// The largest tables may live in a spill file (internal/spill)
		// while the command runs, under the budget the pipeline sets.
		f.unspill, f.spillOff = spill.Enable("")
		return nil
	}
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
	// Spilling ends with the command, also when it panics (a caller that
	// recovers must not find it still on); release is once only.
	unspill := func() {
		if f.unspill != nil {
			f.unspill()
		}
	}
	defer unspill()
	_, err := root.ExecuteContextC(ctx)
	spilled := spill.Read()
	unspill()
	if f.applied {
		// The budget holds for the command alone, so that Main run
		// in-process, as tests do, leaves the runtime as it found it.
		debug.SetMemoryLimit(f.restore)
		memoryNote(f.memory, spilled, f.spillOff, io.ErrOut)
	}
	return exitCode(err, io.ErrOut)
}

// memoryNote says on stderr when the process's peak resident memory passed
// its budget by more than the memory no limit covers: the collector then
// ran as often as the runtime lets it (at most half the CPU) and the
// largest tables were kept in a spill file (spilled), and still the rest of
// the live data was larger than the limit — or spilling was off (off says
// why). What llmprof holds per record is in docs/design.md §3.
func memoryNote(s memlimit.Setting, spilled spill.Stats, off error, w goio.Writer) {
	_, peak := progress.Resident()
	// The limit is the Go runtime's memory; resident memory also holds the
	// binary's pages and the threads' stacks, a few tens of MB that pass no
	// limit: a peak within that margin held it.
	margin := max(uint64(s.Bytes)/20, 32<<20)
	if s.Bytes <= 0 || peak <= uint64(s.Bytes)+margin {
		return
	}
	why := "the data held for the analysis was larger than the limit, which makes the collector work harder but cannot make it smaller"
	switch {
	case spilled.Peak > 0:
		why = fmt.Sprintf("%s of its largest tables were kept in a spill file, and the rest of the data held for the analysis was still larger than the limit", humanize.IBytes(uint64(spilled.Peak)))
	case off != nil:
		why += "; spilling was off: " + off.Error()
	}
	fmt.Fprintf(w, "llmprof: note: peak memory %s passed the memory limit %s (%s): %s (docs/design.md §3 says what is held)\n",
		humanize.IBytes(peak), humanize.IBytes(uint64(s.Bytes)), s.From, why)
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
