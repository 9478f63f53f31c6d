package driver

import (
	"strings"
	"testing"

	"github.com/llmprof/llmprof/attribution"
)

// TestTenantRegressionNeedsTwoTenants: fewer than two tenants is a reason
// not to run, with their number; the count stops at two.
func TestTenantRegressionNeedsTwoTenants(t *testing.T) {
	for _, c := range []struct {
		tenants []string
		want    string
	}{
		{nil, "found 0"},
		{[]string{"a", "a", "a"}, "found 1"},
	} {
		att := &attribution.Result{}
		for _, tn := range c.tenants {
			att.AddRequest(attribution.Request{}, attribution.Labels{Tenant: tn})
		}
		res, why, err := tenantRegression(nil, att, Options{})
		if err != nil || res != nil || !strings.Contains(why, c.want) {
			t.Errorf("tenants %q: %v, %q, %v; want no result and a reason with %q", c.tenants, res, why, err, c.want)
		}
	}
}
