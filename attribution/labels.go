package attribution

import "github.com/llmprof/llmprof/ingest"

// label is one of a request's strings (its ID, tenant, model or finish
// reason) without a pointer: the ID of the string in the trace's table
// (ingest.StrID), where nearly every one already is, as the value of a span
// attribute; or, with ownLabel set, the index of a string the trace does
// not hold (an ID made of the trace and span IDs, a list attribute joined,
// "unknown") in the Result's own list. The zero label is "".
type label uint32

const ownLabel label = 1 << 31

// labeler hands out the labels of one Result while its requests are built.
type labeler struct {
	t *ingest.Trace
	// own holds the strings the trace does not hold, each by
	// label&^ownLabel (nil until the first).
	own *ingest.Strings
	// unk is the label of "unknown" once asked for (0 before).
	unk label
}

// unknown is the label of "unknown", a tenant or model the input does not
// name.
func (l *labeler) unknown() label {
	if l.unk == 0 {
		l.unk = l.of("unknown")
	}
	return l.unk
}

// of returns the label of s: the trace's own ID for it when it has one.
func (l *labeler) of(s string) label {
	if s == "" {
		return 0
	}
	if l.t != nil {
		if id, ok := l.t.Strings.Lookup(s); ok && label(id) < ownLabel {
			return label(id)
		}
	}
	if l.own == nil {
		l.own = ingest.NewStrings()
	}
	id := l.own.Intern(s)
	if label(id) >= ownLabel {
		panic("attribution: 2³¹ strings of a Result's own")
	}
	return label(id) | ownLabel
}

// traced returns the label of a string of the trace's table.
func traced(id ingest.StrID) label {
	if label(id) >= ownLabel {
		panic("attribution: a trace of 2³¹ strings")
	}
	return label(id)
}

// str returns the string of a label.
func (l *labeler) str(id label) string {
	if id&ownLabel != 0 {
		return l.own.Get(ingest.StrID(id &^ ownLabel))
	}
	if l.t == nil {
		return ""
	}
	return l.t.Str(ingest.StrID(id))
}

// ID is the request's ID: its request ID attribute, else its trace and span
// IDs.
func (res *Result) ID(r *Request) string { return res.labels.str(r.id) }

// Tenant is the tenant the request was served for (tenantOf).
func (res *Result) Tenant(r *Request) string { return res.labels.str(r.tenant) }

// Model is the model that served the request ("unknown" when the input does
// not say).
func (res *Result) Model(r *Request) string { return res.labels.str(r.model) }

// Finish is why the request ended, as the input says ("error" for a request
// span with an error status; "" when unknown).
func (res *Result) Finish(r *Request) string { return res.labels.str(r.finish) }

// Labels are a request's strings, for building a Result by hand (AddRequest).
type Labels struct {
	ID, Tenant, Model, Finish string
}

// AddRequest appends r to res.Requests with the strings l: for a Result
// built by hand (tests, tools that make requests of their own), where
// Analyze would have read them from the trace.
func (res *Result) AddRequest(r Request, l Labels) {
	r.id, r.tenant, r.model, r.finish = res.labels.of(l.ID), res.labels.of(l.Tenant), res.labels.of(l.Model), res.labels.of(l.Finish)
	res.Requests = append(res.Requests, r)
}
