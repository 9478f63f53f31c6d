package driver

import (
	"html"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// headlineOf is what one format shows: its findings, in order, and its
// section titles, in order (upper-cased, so the terminal's headings compare
// with the others).
type headlineOf struct {
	findings []string
	sections []string
}

var (
	textHeadingRE = regexp.MustCompile(`^([A-Z][A-Z ]*[A-Z])(?:  |$| \()`)
	textFindingRE = regexp.MustCompile(`^  \d+\. (.*)  → [A-Z ]+$`)
	mdHeadingRE   = regexp.MustCompile(`(?m)^## (.*?)(?: \(\d+\))?$`)
	mdFindingRE   = regexp.MustCompile(`(?m)^\d+\. (.*) \(\[[^]]+\]\(#[a-z-]+\)\)$`)
	htmlSectionRE = regexp.MustCompile(`<section id="[a-z-]+"><h2>(.*?)(?: \(\d+\))?</h2>`)
	htmlFindingRE = regexp.MustCompile(`<li data-kind="[a-z_]+">(.*?) <a href="#[a-z-]+">`)
)

func parseText(out string) headlineOf {
	var h headlineOf
	for _, l := range strings.Split(out, "\n")[1:] {
		if m := textHeadingRE.FindStringSubmatch(l); m != nil {
			h.sections = append(h.sections, m[1])
		} else if m := textFindingRE.FindStringSubmatch(l); m != nil && len(h.sections) == 1 {
			h.findings = append(h.findings, m[1])
		}
	}
	return h
}

func parseMarkdown(out string) headlineOf {
	var h headlineOf
	for _, m := range mdHeadingRE.FindAllStringSubmatch(out, -1) {
		h.sections = append(h.sections, strings.ToUpper(m[1]))
	}
	for _, m := range mdFindingRE.FindAllStringSubmatch(out, -1) {
		h.findings = append(h.findings, m[1])
	}
	return h
}

func parseHTML(page string) headlineOf {
	var h headlineOf
	for _, m := range htmlSectionRE.FindAllStringSubmatch(page, -1) {
		h.sections = append(h.sections, strings.ToUpper(html.UnescapeString(m[1])))
	}
	for _, m := range htmlFindingRE.FindAllStringSubmatch(page, -1) {
		h.findings = append(h.findings, html.UnescapeString(m[1]))
	}
	return h
}

// TestHeadlineFirstInEveryFormat renders the demo report as text, Markdown
// and HTML (analyze --format text, markdown, html): each opens with the findings, the same lines in the same order,
// among them the kernel-level tenant interference, and the sections follow
// in one order in all three.
func TestHeadlineFirstInEveryFormat(t *testing.T) {
	text, md, page := renderAll(t, run(t, Options{}, demoDir))
	formats := map[string]headlineOf{"text": parseText(text), "markdown": parseMarkdown(md), "html": parseHTML(page)}

	want := formats["text"]
	if len(want.sections) == 0 || want.sections[0] != "FINDINGS" {
		t.Fatalf("text report does not open with FINDINGS: sections %q", want.sections)
	}
	if len(want.findings) < 4 {
		t.Fatalf("text headline has %d findings, want the stage, token, tenant and stall ones at least: %q", len(want.findings), want.findings)
	}
	for _, prefix := range []string{"decode is the slowest stage: 90.8%", "78.3% of a decode token's interval", "embed → chat+search (shared) interference", "999 decode tokens"} {
		if !slices.ContainsFunc(want.findings, func(f string) bool { return strings.HasPrefix(f, prefix) }) {
			t.Errorf("no finding starting %q in %q", prefix, want.findings)
		}
	}
	tenant := want.findings[slices.IndexFunc(want.findings, func(f string) bool { return strings.Contains(f, "chat+search (shared)") })]
	if !strings.Contains(tenant, "kernels on GPU 0 by +39.8%") {
		t.Errorf("the tenant finding is not the kernel-level one: %q", tenant)
	}
	t.Logf("sections %q, %d findings", want.sections, len(want.findings))
	for name, got := range formats {
		if len(got.sections) == 0 || got.sections[0] != "FINDINGS" {
			t.Errorf("%s: does not open with the findings: %q", name, got.sections)
		}
		if !slices.Equal(got.findings, want.findings) {
			t.Errorf("%s findings differ from the text's:\n got %q\nwant %q", name, got.findings, want.findings)
		}
		if !slices.Equal(got.sections, want.sections) {
			t.Errorf("%s sections differ from the text's:\n got %q\nwant %q", name, got.sections, want.sections)
		}
	}
	// The text report's findings come before any other section.
	if i, j := strings.Index(text, "FINDINGS"), strings.Index(text, "LATENCY"); i < 0 || j < i {
		t.Errorf("FINDINGS (at %d) is not before LATENCY (at %d)", i, j)
	}
}
