package driver

import (
	"github.com/llmprof/llmprof/compare"
	"github.com/llmprof/llmprof/report"
)

// Report is the analysis report of the run (what `analyze` renders as text,
// JSON or HTML), stamped with the given llmprof version. Its samples are
// the run as `diff` reads it back from a saved analysis
// (compare.FromAttribution), as columns read from the requests as the JSON
// report is written, never made whole (compare.ColumnsOf).
func (a *Result) Report(version string) *report.Report {
	res := a.Attr
	return report.New(report.Input{Version: version, Trace: a.Trace, Align: a.Align, Attr: res, Columns: compare.ColumnsOf(res),
		Tenants: a.Tenants, TenantsNote: a.TenantsNote, GPU: res.GPU, Signals: a.Signals, Sections: a.Sections})
}

// HTMLViews are the charts of the HTML report of the run.
func (a *Result) HTMLViews(rep *report.Report) *report.HTMLViews {
	return report.NewHTMLViews(rep, a.Attr, a.Trace)
}
