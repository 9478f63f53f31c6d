package ingest

// Merge combines traces decoded from separate inputs into one, in the order
// given: sources are appended, and every StrID, resource, scope, array and map
// index is remapped into the result's tables. The parts must not be used
// afterwards (their record slices are reused where possible).
func Merge(parts ...*Trace) *Trace {
	if len(parts) == 1 {
		return parts[0]
	}
	out := New()
	// Size the big slices once: appending part by part would copy them again
	// at every growth.
	var spans, ops, samples, mem int
	for _, p := range parts {
		spans, ops, samples = spans+len(p.Spans), ops+len(p.GPUOps), samples+len(p.Samples)
		mem += len(p.MemoryEvents)
	}
	out.Spans = make([]Span, 0, spans)
	out.GPUOps = make([]GPUOp, 0, ops)
	out.Samples = make([]Sample, 0, samples)
	out.MemoryEvents = make([]MemoryEvent, 0, mem)
	for _, p := range parts {
		out.absorb(p)
	}
	return out
}

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

func (t *Trace) absorb(p *Trace) {
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
		s.Attrs = r.attrs(s.Attrs)
		for j := range s.Events {
			s.Events[j].Name = r.str(s.Events[j].Name)
			s.Events[j].Attrs = r.attrs(s.Events[j].Attrs)
		}
		for j := range s.Links {
			s.Links[j].Attrs = r.attrs(s.Links[j].Attrs)
		}
	}
	t.Spans = append(t.Spans, p.Spans...)
	for i := range p.GPUOps {
		o := &p.GPUOps[i]
		o.Name = r.str(o.Name)
		o.ShortName = r.str(o.ShortName)
		o.Source += r.src
	}
	t.GPUOps = append(t.GPUOps, p.GPUOps...)
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
	t.Samples = append(t.Samples, p.Samples...)
	for i := range p.MemoryEvents {
		p.MemoryEvents[i].Source += r.src
	}
	t.MemoryEvents = append(t.MemoryEvents, p.MemoryEvents...)
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
