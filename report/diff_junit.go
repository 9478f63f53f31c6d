package report

import (
	"encoding/xml"
	"fmt"
	"io"

	"github.com/llmprof/llmprof/compare"
)

// JUnit XML as CI test reporters read it (the de-facto schema of Ant's
// JUnit task, as consumed by GitHub, GitLab and Jenkins): one testcase per
// gate rule, a failure element for "fail", and "skipped" for
// "inconclusive" — or a failure when inconclusive rules fail the gate.
type junitSuites struct {
	XMLName  xml.Name     `xml:"testsuites"`
	Name     string       `xml:"name,attr"`
	Tests    int          `xml:"tests,attr"`
	Failures int          `xml:"failures,attr"`
	Skipped  int          `xml:"skipped,attr"`
	Suites   []junitSuite `xml:"testsuite"`
}

type junitSuite struct {
	Name       string          `xml:"name,attr"`
	Tests      int             `xml:"tests,attr"`
	Failures   int             `xml:"failures,attr"`
	Errors     int             `xml:"errors,attr"`
	Skipped    int             `xml:"skipped,attr"`
	Properties []junitProperty `xml:"properties>property"`
	Cases      []junitCase     `xml:"testcase"`
}

type junitProperty struct {
	Name  string `xml:"name,attr"`
	Value string `xml:"value,attr"`
}

type junitCase struct {
	Name      string        `xml:"name,attr"`
	Classname string        `xml:"classname,attr"`
	Failure   *junitFailure `xml:"failure"`
	Skipped   *junitSkipped `xml:"skipped"`
	SystemOut string        `xml:"system-out,omitempty"`
}

type junitFailure struct {
	Message string `xml:"message,attr"`
	Type    string `xml:"type,attr"`
	Body    string `xml:",chardata"`
}

type junitSkipped struct {
	Message string `xml:"message,attr"`
}

// WriteDiffJUnit writes one testcase per gated metric.
func WriteDiffJUnit(w io.Writer, res *compare.Result) error {
	suite := junitSuite{
		Name: "llmprof.diff",
		Properties: []junitProperty{
			{"baseline", sideLine(res.Baseline)},
			{"candidate", sideLine(res.Candidate)},
			{"gate", string(res.Gate.Verdict)},
		},
	}
	for _, m := range res.Metrics {
		g := m.Gate
		if g == nil {
			continue
		}
		detail := fmt.Sprintf("%s: baseline %s, candidate %s, change %s (%s), p %s, MDE %s",
			m.Name, fmtValue(m.Baseline, m.Unit), fmtValue(m.Candidate, m.Unit), fmtPct(m.DeltaPct), fmtCI(m), fmtP(m.P), fmtMDE(m))
		if e := explanationLine(m, 5); e != "" {
			detail += "\n" + e
		}
		c := junitCase{Name: g.Rule.String(), Classname: "llmprof.diff." + m.Name}
		switch {
		case g.Verdict == compare.Fail:
			c.Failure = &junitFailure{Message: g.Reason, Type: "regression", Body: detail}
			suite.Failures++
		case g.Verdict == compare.Inconclusive && res.Gate.FailOnInconclusive:
			c.Failure = &junitFailure{Message: "inconclusive: " + g.Reason, Type: "inconclusive", Body: detail}
			suite.Failures++
		case g.Verdict == compare.Inconclusive:
			c.Skipped = &junitSkipped{Message: "inconclusive: " + g.Reason}
			c.SystemOut = detail
			suite.Skipped++
		default:
			c.SystemOut = g.Reason + "\n" + detail
		}
		suite.Cases = append(suite.Cases, c)
		suite.Tests++
	}
	doc := junitSuites{Name: "llmprof diff", Tests: suite.Tests, Failures: suite.Failures, Skipped: suite.Skipped, Suites: []junitSuite{suite}}
	if _, err := io.WriteString(w, xml.Header); err != nil {
		return err
	}
	enc := xml.NewEncoder(w)
	enc.Indent("", "  ")
	if err := enc.Encode(doc); err != nil {
		return err
	}
	_, err := io.WriteString(w, "\n")
	return err
}
