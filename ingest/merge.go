package ingest

import "github.com/llmprof/llmprof/internal/spill"

// Merge combines traces decoded from separate inputs into one, in the order
// given: sources are appended, and every StrID, resource, scope, array and map
// index is remapped into the result's tables. The parts must not be used
// afterwards: their records are rewritten in place and their slices moved
// into the result.
//
// The record slices (spans and their attributes, API calls, GPU ops, samples,
// memory events) are not copied
// where that can be avoided, because they are most of the model: a table
// only one part has records in (GPU ops and CUDA API calls come from one
// nsys export or PyTorch profiler trace in the common case) is moved as it
// is; otherwise the parts are laid out, in order, in the largest part's
// array when its capacity allows, and only then in one new array sized once
// (concat).
func Merge(parts ...*Trace) *Trace {
	if len(parts) == 1 {
		return parts[0]
	}
	out := New()
	// Each part's attributes, extras, events and links land after those
	// of the parts before it (concat keeps part order): its ranges and
	// indices are rebased by their lengths.
	var at spanTables
	for _, p := range parts {
		out.absorb(p, at)
		at.attrs += uint32(len(p.AttrArena))
		at.extras += uint32(len(p.SpanExtras))
		at.events += uint32(len(p.SpanEvents))
		at.links += uint32(len(p.SpanLinks))
	}
	out.Spans = concat(parts, func(p *Trace) *[]Span { return &p.Spans }, spill.Slice[Span])
	out.AttrArena = concat(parts, func(p *Trace) *[]Attr { return &p.AttrArena }, spill.Slice[Attr])
	out.SpanExtras = concat(parts, func(p *Trace) *[]SpanExtra { return &p.SpanExtras }, spill.Slice[SpanExtra])
	out.SpanEvents = concat(parts, func(p *Trace) *[]Event { return &p.SpanEvents }, spill.Slice[Event])
	out.SpanLinks = concat(parts, func(p *Trace) *[]Link { return &p.SpanLinks }, spill.Slice[Link])
	// The tables a decoder may have put in a spill file go to one when
	// they are merged into a new array (internal/spill).
	out.APICalls = concat(parts, func(p *Trace) *[]APICall { return &p.APICalls }, spill.Slice[APICall])
	out.GPUOps = concat(parts, func(p *Trace) *[]GPUOp { return &p.GPUOps }, spill.Slice[GPUOp])
	out.Samples = concat(parts, func(p *Trace) *[]Sample { return &p.Samples }, heapSlice)
	out.MemoryEvents = concat(parts, func(p *Trace) *[]MemoryEvent { return &p.MemoryEvents }, heapSlice)
	return out
}

// concat returns the parts' records of one table in part order, taking the
// records out of the parts (each part's slice is set to nil, so that a copy
// made here does not keep its source alive), a new array made by alloc
// (length 0, capacity n). One non-empty part: its slice
// itself. Several: the largest part's array when it has room for all (its
// records moved up in place, the others copied around them), else one new
// array of the total size. A part's array the records were copied out of
// goes back at once when it was in a spill file (spill.Free).
func concat[T any](parts []*Trace, field func(*Trace) *[]T, alloc func(n int) []T) []T {
	total, largest, nonEmpty := 0, -1, 0
	for i, p := range parts {
		n := len(*field(p))
		total += n
		if n > 0 {
			nonEmpty++
			if largest < 0 || n > len(*field(parts[largest])) {
				largest = i
			}
		}
	}
	take := func(p *Trace) []T {
		f := field(p)
		s := *f
		*f = nil
		return s
	}
	switch {
	case nonEmpty == 0:
		for _, p := range parts {
			*field(p) = nil
		}
		return make([]T, 0)
	case nonEmpty == 1:
		for _, p := range parts[:largest] {
			*field(p) = nil
		}
		out := take(parts[largest])
		for _, p := range parts[largest+1:] {
			*field(p) = nil
		}
		return out
	}
	if base := *field(parts[largest]); cap(base) >= total {
		before := 0
		for _, p := range parts[:largest] {
			before += len(*field(p))
		}
		out := base[:total]
		copy(out[before:], base) // overlapping: copy moves like memmove
		at := 0
		for i, p := range parts {
			if i == largest {
				take(p)
				at += len(base)
				continue
			}
			s := take(p)
			at += copy(out[at:], s)
			spill.Free(s)
		}
		return out
	}
	out := alloc(total)
	for _, p := range parts {
		s := take(p)
		out = append(out, s...)
		spill.Free(s)
	}
	return out
}

// heapSlice is make([]T, 0, n), concat's alloc for tables never spilled.
func heapSlice[T any](n int) []T { return make([]T, 0, n) }

// remapper translates the IDs of one part into the merged trace.
type remapper struct {
	strs              []StrID
	src               SourceID
	res, scope        int32
	arrayOff, mapsOff int
}

func (r *remapper) str(id StrID) StrID {
	if int(id) < len(r.strs) {
		return r.strs[id]
	}
	return 0
}

func (r *remapper) value(v Value) Value {
	switch v.kind {
	case KindString, KindBytes:
		v.num = uint64(r.str(StrID(v.num)))
	case KindArray:
		v.num += uint64(r.arrayOff)
	case KindMap:
		v.num += uint64(r.mapsOff)
	}
	return v
}

// attrs rewrites a slice of attributes in place.
func (r *remapper) attrs(as []Attr) []Attr {
	for i := range as {
		as[i].Key = r.str(as[i].Key)
		as[i].SetValue(r.value(as[i].Value()))
	}
	return as
}

// spanTables are the lengths of the span side tables of the parts before
// one in a merge: where that part's land in the merged ones.
type spanTables struct{ attrs, extras, events, links uint32 }

// rebase moves a range of the part's AttrArena to where it lands.
func (at spanTables) rebase(r *AttrRange) {
	if r.Len > 0 {
		r.Off += at.attrs
	}
}

// absorb appends p's small tables (sources, strings, resources, scopes,
// arrays, maps, series, devices, processes, threads, warnings) to t and
// rewrites p's records in place to t's IDs, the ranges and indices of its
// spans, extras, events and links to where p's side tables (AttrArena,
// SpanExtras, SpanEvents, SpanLinks) will be in t's (after those of the
// parts before, at); Merge then moves the records.
func (t *Trace) absorb(p *Trace, at spanTables) {
	r := &remapper{
		strs:     make([]StrID, p.Strings.Len()),
		src:      SourceID(len(t.Sources)),
		res:      int32(len(t.Resources)),
		scope:    int32(len(t.Scopes)),
		arrayOff: len(t.Arrays),
		mapsOff:  len(t.Maps),
	}
	for i := range r.strs {
		r.strs[i] = t.Strings.Intern(p.Strings.Get(StrID(i)))
	}
	t.Sources = append(t.Sources, p.Sources...)
	for _, a := range p.Arrays {
		for i := range a {
			a[i] = r.value(a[i])
		}
		t.Arrays = append(t.Arrays, a)
	}
	for _, m := range p.Maps {
		t.Maps = append(t.Maps, r.attrs(m))
	}
	for _, res := range p.Resources {
		res.Attrs = r.attrs(res.Attrs)
		res.SchemaURL = r.str(res.SchemaURL)
		t.Resources = append(t.Resources, res)
	}
	for _, sc := range p.Scopes {
		sc.Name, sc.Version = r.str(sc.Name), r.str(sc.Version)
		sc.Attrs = r.attrs(sc.Attrs)
		t.Scopes = append(t.Scopes, sc)
	}
	for i := range p.Spans {
		s := &p.Spans[i]
		s.Name = r.str(s.Name)
		s.StatusMsg = r.str(s.StatusMsg)
		s.Source += r.src
		if s.Resource >= 0 {
			s.Resource += r.res
		}
		if s.Scope >= 0 {
			s.Scope += r.scope
		}
		at.rebase(&s.Attrs)
		if s.Extra > 0 {
			s.Extra += at.extras
		}
	}
	r.attrs(p.AttrArena)
	for i := range p.SpanExtras {
		x := &p.SpanExtras[i]
		if x.EventLen > 0 {
			x.EventOff += at.events
		}
		if x.LinkLen > 0 {
			x.LinkOff += at.links
		}
	}
	for i := range p.SpanEvents {
		e := &p.SpanEvents[i]
		e.Name = r.str(e.Name)
		at.rebase(&e.Attrs)
	}
	for i := range p.SpanLinks {
		at.rebase(&p.SpanLinks[i].Attrs)
	}
	for i := range p.APICalls {
		c := &p.APICalls[i]
		c.Name = r.str(c.Name)
		c.Source += r.src
	}
	var shapes []ShapeID // p's shape k+1 is t's shapes[k]
	if len(p.Shapes) > 0 {
		shapes = make([]ShapeID, len(p.Shapes))
		for k, s := range p.Shapes {
			shapes[k] = t.InternShape(s)
		}
	}
	for i := range p.GPUOps {
		o := &p.GPUOps[i]
		o.Name = r.str(o.Name)
		o.ShortName = r.str(o.ShortName)
		o.Source += r.src
		if o.Shape != 0 {
			o.Shape = shapes[o.Shape-1]
		}
	}
	seriesOff := SeriesID(len(t.Series))
	for _, se := range p.Series {
		se.Name, se.Family, se.Unit = r.str(se.Name), r.str(se.Family), r.str(se.Unit)
		se.Labels = r.attrs(se.Labels)
		se.Source += r.src
		if se.Resource >= 0 {
			se.Resource += r.res
		}
		t.Series = append(t.Series, se)
	}
	for i := range p.Samples {
		s := &p.Samples[i]
		s.Metric = r.str(s.Metric)
		s.Source += r.src
		if s.Series != 0 {
			s.Series += seriesOff
		}
	}
	for i := range p.MemoryEvents {
		p.MemoryEvents[i].Source += r.src
	}
	for _, d := range p.Devices {
		d.Source += r.src
		t.Devices = append(t.Devices, d)
	}
	for _, pr := range p.Processes {
		pr.Source += r.src
		t.Processes = append(t.Processes, pr)
	}
	for _, th := range p.Threads {
		th.Source += r.src
		t.Threads = append(t.Threads, th)
	}
	for _, w := range p.Warnings.List {
		t.Warnings.Add(w)
	}
}
