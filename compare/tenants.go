package compare

import "github.com/llmprof/llmprof/causal"

// TenantSeries fills Run.Tenants from the tenant analysis of the same run:
// per source tenant, the milliseconds each request (in attribution order,
// n of them) lost to that tenant's concurrent work stretching its kernels
// (causal.KernelResult.RequestCost, the kernel view's impact). diff's
// tenant.NAME metric divides their total by the run's output tokens like
// every per-token family. It returns an empty map (the family present, no
// tenant) when the analysis ran without a kernel view, and nil when it did
// not run.
func TenantSeries(res *causal.Result, n int) map[string]Series {
	if res == nil {
		return nil
	}
	out := map[string]Series{}
	for name, v := range res.Kernel.RequestCost(n) {
		out[name] = Series(v)
	}
	return out
}
