package main

import (
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/llmprof/llmprof/internal/driver"
	"github.com/llmprof/llmprof/report"
)

// NewCmdTenants builds `llmprof tenants`.
func NewCmdTenants(f *Factory) *cobra.Command {
	opts := &driver.TenantFlags{}
	var format, output, tenantKey string
	cmd := &cobra.Command{
		Use:   "tenants [flags] <input>...",
		Short: "Which tenant's load slows which other tenant, by how much, and how sure",
		Long: strings.TrimSpace(`
Tenant causal regression (docs/tenants.md). For every ordered pair of tenants A → B
it regresses B's log latency on B's exposure to A's load during each request
(GPU busy time of A's kernels, NVML per-process SM utilization, or A's tokens
in flight — the best the input has), holding B's own batch size and prompt
and completion lengths fixed, with standard errors clustered by time; a
binned distributed-lag model with Newey–West errors, a Granger test and a
placebo (A's future load must not predict B) is the second view;
Benjamini–Hochberg controls the false discovery rate across pairs.

Each pair gets an effect in ms and % per step of A's load with its 95%
interval, a q-value, the share of B's latency attributable to A, and a
verdict: interference, association (placebo or sign fails), negligible, no
evidence, or not estimable (with the reason). Tenants on different GPUs or MIG
instances are negative controls.

At kernel level (what a 10–60 s capture carries) each of B's kernels is
compared with the same kernel alone: its duration against the share of it
that A's work on the same GPU overlapped, within kernel identity and B's
batch, with errors clustered in time blocks chosen from the data: "A's
concurrent work stretches B's kernels by +35% [CI]", what that costs B's
requests in ms of TTFT and TPOT, and per kernel category.

Tenants come from --tenant-key (default llm.tenant, tenant.id, enduser.id,
then the calling service). A process's tenant is the tenant of the requests
it serves (resource process.pid, the engine of their steps); one serving
several tenants is a shared source ("chat+search (shared)"), never paired
with its own tenants. Otherwise: --tenant-pid, resource keys, nsys process
names, MIG instances. See docs/tenants.md.`),
		Example: examples(`
  llmprof tenants run/
  llmprof tenants --tenant-key customer.id --metric ttft,tpot,e2e traces.jsonl gpu.sqlite
  llmprof tenants --tenant-pid 4100=search --tenant-pid 4200=batch --load gpu_busy run.llmprof/
  llmprof tenants --format json run/ | jq '.pairs[] | select(.verdict=="interference")'`),
		Args: argsNamed(1, -1, "<input>: a trace file, a directory, or - for stdin"),
		RunE: func(cmd *cobra.Command, args []string) error {
			fm, ok := report.TenantsFormats.Find(format)
			if !ok {
				return usageErrorf("--format must be %s, not %q", report.TenantsFormats.Names(), format)
			}
			to, err := opts.Options()
			if err != nil {
				return err
			}
			a, err := driver.Run(cmd.Context(), args, f.pipeline(driver.Options{TenantKey: tenantKey, RequestsOnly: true, Tenants: to}))
			if err != nil {
				return err
			}
			return f.IO.WriteOutput(output, func(w io.Writer, tty bool) error {
				return fm.Write(w, report.Tenants{Result: a.Tenants, Note: a.TenantsNote}, textOptions(f.IO, w, tty))
			})
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&format, "format", "text", "output format: "+report.TenantsFormats.Names())
	fl.StringVarP(&output, "output", "o", "", "write to `FILE` instead of stdout")
	fl.StringVar(&tenantKey, "tenant-key", "", "attribute naming a request's tenant")
	fl.StringArrayVar(&opts.Pids, "tenant-pid", nil, "assign a process to a tenant, `PID=TENANT` (repeatable)")
	fl.DurationVar(&opts.Bin, "bin", time.Second, "load bin width")
	fl.StringVar(&opts.Load, "load", "auto", "load series: auto, gpu_busy, sm_util, tokens_in_flight or prefill_tokens")
	fl.StringVar(&opts.Metrics, "metric", "ttft,tpot", "latency metrics to explain: ttft, tpot, e2e (comma-separated)")
	fl.BoolVar(&opts.NoLag, "no-lag", false, "skip the binned lag model (Granger and placebo)")
	return cmd
}
