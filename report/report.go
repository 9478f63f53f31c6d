// Package report renders analysis results: it is the last stage of the
// pipeline. A Report value is assembled from the results of attribution (and
// align, causal, …) once, then handed to every renderer — terminal text,
// JSON, Markdown — so that no renderer computes anything beyond formatting.
package report

import (
	"fmt"
	"strings"

	"github.com/llmprof/llmprof/align"
	"github.com/llmprof/llmprof/attribution"
	"github.com/llmprof/llmprof/causal"
	"github.com/llmprof/llmprof/compare"
	"github.com/llmprof/llmprof/ingest"
	"github.com/llmprof/llmprof/signals"
)

// Schema is the version of the JSON report; renaming or removing a field
// bumps it (docs/design.md §11).
const Schema = "llmprof.report/v1"

// Report is everything one `llmprof analyze` shows.
type Report struct {
	Schema  string `json:"schema"`
	Version string `json:"llmprof_version"`
	// Unrelated says, when several inputs were given, that they do not
	// belong to one run (different hosts, or clocks that cannot be
	// aligned), so nothing is joined across them; empty otherwise.
	Unrelated string `json:"unrelated_inputs,omitempty"`
	// Headline is the report's findings, one line each, in the order every
	// renderer prints them first (headline.go).
	Headline []Finding `json:"headline"`
	Sources  []Source  `json:"sources"`
	// Alignment has one fit per clock domain (docs/design.md §11 alignment[]);
	// Causality counts GPU ops that start before their launch, after it.
	Alignment   []align.Fit               `json:"alignment"`
	Causality   *align.Causality          `json:"causality,omitempty"`
	Requests    *Requests                 `json:"requests"`
	Stages      []attribution.StageTotal  `json:"stages"`
	BlindSpots  *attribution.BlindSpots   `json:"blind_spots,omitempty"`
	KVCache     *attribution.KVCache      `json:"kv_cache,omitempty"`
	ModelEvents []attribution.ModelEvent  `json:"model_events,omitempty"`
	Tokens      *attribution.TokenSummary `json:"tokens,omitempty"`
	// GPU is the GPU section (docs/design.md §11 gpu.kernel_categories[]).
	GPU *attribution.GPU `json:"gpu,omitempty"`
	// GPUCoverage is set when the GPU data covers only part of the run.
	GPUCoverage *GPUCoverage `json:"gpu_coverage,omitempty"`
	// Tenants is the tenant causal regression (docs/design.md §11 tenants.pairs[]);
	// TenantsNote says why it is absent.
	Tenants     *causal.Result `json:"tenants,omitempty"`
	TenantsNote string         `json:"tenants_note,omitempty"`
	// Infrastructure is the metrics section (report/signals.go): latency
	// spikes and the signals that deviated with them; nil without metrics.
	Infrastructure *signals.Result `json:"infrastructure,omitempty"`
	// Analyses are the results of the registered analyses the report has
	// no field for, by id (AnalysisSection); sections are their sections.
	Analyses map[string]any `json:"analyses,omitempty"`
	sections []AnalysisSection
	Warnings []ingest.Warning `json:"warnings"`
	// Samples are the per-request observations `llmprof diff` compares, so
	// that a saved analysis can be a diff baseline.
	Samples *compare.Run `json:"samples,omitempty"`
	// columns, when Samples is nil, are the samples as columns
	// (Input.Columns), which WriteJSON writes as Samples.
	columns *compare.Columns
}

// Source is one input file as the report lists it.
type Source struct {
	Path     string `json:"path"`
	Format   string `json:"format"`
	Producer string `json:"producer,omitempty"`
	Spans    int    `json:"spans"`
	GPUOps   int    `json:"gpu_ops"`
	Samples  int    `json:"samples"`
	Warnings int    `json:"warnings"`
}

// Requests is the request-level section: the overall summary (count,
// metrics, duration, tokens, throughput, goodput — promoted, so the JSON has
// requests.count and requests.metrics), then the groups.
type Requests struct {
	attribution.Summary
	Styles   map[string]int                 `json:"conventions"`
	ByTenant map[string]attribution.Summary `json:"by_tenant"`
	ByModel  map[string]attribution.Summary `json:"by_model"`
	// TenantOrder and ModelOrder keep the renderers' row order (largest
	// group first); maps alone would not.
	TenantOrder []string        `json:"-"`
	ModelOrder  []string        `json:"-"`
	SLO         attribution.SLO `json:"slo"`
	// E2ESource says which E2E the figures use, with the servers' own e2e
	// attribute beside it (absent when no request carries one).
	E2ESource *attribution.E2ENote `json:"e2e_source,omitempty"`
}

// Input bundles the results a report is built from.
type Input struct {
	Version string
	Trace   *ingest.Trace
	Align   *align.Result
	Attr    *attribution.Result
	Samples *compare.Run
	// Columns are the samples as columns (compare.ColumnsOf), written in
	// the JSON report as Samples would be without being made whole: used
	// when Samples is nil.
	Columns     *compare.Columns
	Tenants     *causal.Result
	TenantsNote string
	GPU         *attribution.GPU
	Signals     *signals.Result
	// Sections are the registered analyses' sections (AnalysisSection).
	Sections []AnalysisSection
}

// unrelatedInputs explains why several inputs are not one run: their GPU
// records come from different hosts, or some clock could not be aligned.
func unrelatedInputs(in Input) string {
	if in.Trace == nil || len(in.Trace.Sources) < 2 {
		return ""
	}
	var parts []string
	if in.GPU != nil && len(in.GPU.Hosts) > 1 {
		names := make([]string, len(in.GPU.Hosts))
		for i, h := range in.GPU.Hosts {
			names[i] = h.Name
		}
		parts = append(parts, fmt.Sprintf("they come from %d different hosts or captures (%s)", len(names), strings.Join(names, ", ")))
	}
	if in.Align != nil {
		var apart []string
		for _, f := range in.Align.Fits {
			if f.Status == align.StatusCannotAlign {
				apart = append(apart, strings.Join(f.Sources, ", "))
			}
		}
		if len(apart) > 0 {
			parts = append(parts, fmt.Sprintf("%s cannot be aligned with the others", strings.Join(apart, "; ")))
		}
	}
	if len(parts) == 0 {
		return ""
	}
	return "these inputs are not one run: " + strings.Join(parts, "; ") + ". Each is analysed on its own clock and device set; nothing is joined or merged across them."
}

// New assembles a report. It copies and arranges; it does not analyse.
func New(in Input) *Report {
	r := &Report{Schema: Schema, Version: in.Version}
	t := in.Trace
	warnPerSource := map[string]int{}
	for _, w := range t.Warnings.List {
		warnPerSource[w.Path] += 1 + w.More
	}
	for _, s := range t.Sources {
		r.Sources = append(r.Sources, Source{
			Path: s.Path, Format: s.Format, Producer: s.Producer,
			Spans: s.Spans, GPUOps: s.GPUOps, Samples: s.Samples, Warnings: warnPerSource[s.Path],
		})
	}
	r.Warnings = append(r.Warnings, t.Warnings.List...)
	r.Alignment = []align.Fit{}
	if in.Align != nil {
		r.Alignment = in.Align.Fits
		c := in.Align.Causality
		r.Causality = &c
	}
	r.Unrelated = unrelatedInputs(in)
	r.Samples = in.Samples
	if in.Samples == nil {
		r.columns = in.Columns
	}
	r.Tenants, r.TenantsNote = in.Tenants, in.TenantsNote
	r.GPU = in.GPU
	r.Infrastructure = in.Signals
	for _, s := range in.Sections {
		if r.Analyses == nil {
			r.Analyses = map[string]any{}
		}
		r.Analyses[s.ID] = s.Result
		r.sections = append(r.sections, s)
	}
	if a := in.Attr; a != nil {
		req := &Requests{
			Summary: a.Overall, Styles: map[string]int{},
			ByTenant: map[string]attribution.Summary{}, ByModel: map[string]attribution.Summary{}, SLO: a.Options.SLO,
		}
		for st, n := range a.Styles {
			req.Styles[string(st)] = n
		}
		for _, s := range a.ByTenant {
			req.ByTenant[s.Name] = s
			req.TenantOrder = append(req.TenantOrder, s.Name)
		}
		for _, s := range a.ByModel {
			req.ByModel[s.Name] = s
			req.ModelOrder = append(req.ModelOrder, s.Name)
		}
		if a.E2E.WithAttribute > 0 {
			n := a.E2E
			req.E2ESource = &n
		}
		r.Requests = req
		r.Stages = a.Stages
		if len(a.Requests) > 0 {
			bs := a.BlindSpots
			r.BlindSpots = &bs
		}
		r.KVCache = a.KVCache
		r.ModelEvents = a.ModelEvents
		r.Tokens = a.Tokens
		r.Warnings = append(r.Warnings, a.Warnings...)
		r.GPUCoverage = gpuCoverage(in.GPU, a.Requests)
	}
	r.Headline = headline(r)
	if r.Headline == nil {
		r.Headline = []Finding{}
	}
	if r.Warnings == nil {
		r.Warnings = []ingest.Warning{}
	}
	return r
}
