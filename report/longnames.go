package report

import (
	"encoding/json"
	"fmt"
	"hash/fnv"
	"sort"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/llmprof/llmprof/compare"
)

// Names a user controls (tenants, models, kernels, spans) can be of any
// length; issue 31's 200 kB name, repeated 121 times, made a 74 MB page. So
// in text and HTML every run of more than maxNameRunes non-space
// characters prints as its start, an ellipsis, its end and a tag made from
// a hash of the whole ("head…tail [#1a2b3c4d]": different names stay
// different), and the report lists each such name in full once, at the end,
// by its tag. JSON, Markdown and the tables' data keep every name whole.
const (
	maxNameRunes  = 160
	nameHeadRunes = 48
	nameTailRunes = 16
)

// longRuns calls fn for every run of non-space characters in s longer than
// maxNameRunes, with its byte offsets; what the sentence around it puts
// there is not part of it: punctuation that ends a clause ("… for model
// NAME;"), a bracket the name does not open ("(NAME)", where a kernel's
// "f(float*)" keeps its own), a possessive ("NAME's"). Otherwise one name
// printed so in two places was two names, each listed in full (a tenant's
// 200 kB name three times in a text report).
func longRuns(s string, fn func(start, end int)) {
	emit := func(start, end int) {
		for start < end && strings.IndexByte(`"'(`, s[start]) >= 0 {
			start++
		}
		for trimmed := true; trimmed && end > start; {
			trimmed = false
			for end > start && strings.IndexByte(`.,;:"'`, s[end-1]) >= 0 {
				end, trimmed = end-1, true
			}
			if end > start && s[end-1] == ')' && strings.Count(s[start:end], ")") > strings.Count(s[start:end], "(") {
				end, trimmed = end-1, true
			}
			for _, pos := range []string{"'s", "’s"} {
				if strings.HasSuffix(s[start:end], pos) {
					end, trimmed = end-len(pos), true
				}
			}
		}
		if utf8.RuneCountInString(s[start:end]) > maxNameRunes {
			fn(start, end)
		}
	}
	start, runes := -1, 0
	for i, c := range s {
		if unicode.IsSpace(c) {
			if start >= 0 && runes > maxNameRunes {
				emit(start, i)
			}
			start, runes = -1, 0
			continue
		}
		if start < 0 {
			start = i
		}
		runes++
	}
	if start >= 0 && runes > maxNameRunes {
		emit(start, len(s))
	}
}

// nameTag is the tag a long name is listed under.
func nameTag(full string) string {
	h := fnv.New32a()
	h.Write([]byte(full))
	return fmt.Sprintf("[#%08x]", h.Sum32())
}

// shortName is how a long run prints.
func shortName(full string) string {
	r := []rune(full)
	return string(r[:nameHeadRunes]) + "…" + string(r[len(r)-nameTailRunes:]) + " " + nameTag(full)
}

// cutLongNames shortens every long run in s; seen, when not nil, collects
// the full runs by tag.
func cutLongNames(s string, seen map[string]string) string {
	var b strings.Builder
	last := 0
	longRuns(s, func(start, end int) {
		if last == 0 {
			b.Grow(len(s) / 2)
		}
		full := validPerByte(s[start:end])
		b.WriteString(s[last:start])
		b.WriteString(shortName(full))
		if seen != nil {
			seen[nameTag(full)] = full
		}
		last = end
	})
	if last == 0 {
		return s
	}
	b.WriteString(s[last:])
	return b.String()
}

// sortedTags returns the tags of seen in order.
func sortedTags(seen map[string]string) []string {
	tags := make([]string, 0, len(seen))
	for t := range seen {
		tags = append(tags, t)
	}
	sort.Strings(tags)
	return tags
}

// textLongNames shortens the long names of a text report and lists each in
// full once at its end.
func (r *Report) textLongNames(s string) string {
	seen := map[string]string{}
	s = cutLongNames(s, seen)
	r.longNamesShown(s, seen)
	if len(seen) == 0 {
		return s
	}
	var b strings.Builder
	b.WriteString(s)
	fmt.Fprintf(&b, "\nFULL NAMES  %s shortened above\n", plural(len(seen), "name"))
	for _, t := range sortedTags(seen) {
		fmt.Fprintf(&b, "  %s %s\n", t, seen[t])
	}
	return b.String()
}

// longNamesShown adds to seen every long run among the report's strings
// (its JSON) once out shows a shortened name: names cut where they were
// printed without being collected (esc, table cells, or a table's own
// fixed cut, which shows no tag).
func (r *Report) longNamesShown(out string, seen map[string]string) {
	if !strings.Contains(out, "…") {
		return
	}
	data, err := json.Marshal(r)
	if err != nil {
		return
	}
	var v any
	if json.Unmarshal(data, &v) != nil {
		return
	}
	var samples any
	if c := r.columns; r.Samples == nil && c != nil {
		// The samples written from columns, which json.Marshal leaves
		// out (Report.columns): the run's other fields, then the names
		// of the series and of their maps.
		if data, err = json.Marshal(c.Run); err != nil || json.Unmarshal(data, &samples) != nil {
			return
		}
		var names []any
		for _, m := range []struct {
			key string
			m   []compare.Column
		}{{"", c.Series}, {"stages_ms", c.Stages}, {"tokens_ms", c.Tokens}, {"first_token_ms", c.FirstToken}} {
			if len(m.m) > 0 && m.key != "" {
				names = append(names, m.key)
			}
			for _, col := range m.m {
				names = append(names, col.Name)
			}
		}
		samples = []any{samples, names}
	}
	var walk func(any)
	walk = func(v any) {
		switch v := v.(type) {
		case string:
			longRuns(v, func(start, end int) {
				full := v[start:end]
				seen[nameTag(full)] = full
			})
		case []any:
			for _, e := range v {
				walk(e)
			}
		case map[string]any:
			for k, e := range v {
				walk(k)
				walk(e)
			}
		}
	}
	walk(v)
	walk(samples)
}

// htmlLongNames is the page's list of the long names it shortened (esc
// cuts them without collecting), each once.
func (r *Report) htmlLongNames(page string) string {
	seen := map[string]string{}
	r.longNamesShown(page, seen)
	if len(seen) == 0 {
		return ""
	}
	var b strings.Builder
	fmt.Fprintf(&b, `<section id="full-names"><h2>Full names</h2><p class="dim">%s shortened on this page, each in full once</p><dl>`,
		esc(plural(len(seen), "name")))
	for _, t := range sortedTags(seen) {
		fmt.Fprintf(&b, `<dt>%s</dt><dd class="full-name">%s</dd>`, esc(t), escWhole(seen[t]))
	}
	b.WriteString(`</dl></section>`)
	return b.String()
}

// validPerByte replaces each byte of s that is not UTF-8 by U+FFFD, as
// encoding/json writes it: a name is tagged where it is cut and again from
// the report's JSON (longNamesShown), and the two tags must agree.
// strings.ToValidUTF8 would make one U+FFFD of a run of bad bytes.
func validPerByte(s string) string {
	if utf8.ValidString(s) {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + 8)
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b.WriteRune(utf8.RuneError)
		} else {
			b.WriteString(s[i : i+size])
		}
		i += size
	}
	return b.String()
}
