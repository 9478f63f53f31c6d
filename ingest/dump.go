package ingest

import (
	"bufio"
	"fmt"
	"io"
	"strconv"
)

// DumpOptions controls the canonical dump.
type DumpOptions struct {
	// Sources includes the source table (paths and formats). Leave it off to
	// compare the same data decoded from different encodings.
	Sources bool
	// Warnings includes the warnings.
	Warnings bool
}

// Dump writes a canonical, line-oriented text form of the trace: one line per
// record in model order, every string quoted, every time in integer ns. Two
// inputs that carry the same data dump identically whatever their encoding,
// which is what the golden tests rely on.
func (t *Trace) Dump(w io.Writer, opts DumpOptions) error {
	b := bufio.NewWriter(w)
	if opts.Sources {
		for i, s := range t.Sources {
			fmt.Fprintf(b, "source %d path=%q format=%q producer=%q clock=%q kind=%s spans=%d gpu_ops=%d samples=%d",
				i, s.Path, s.Format, s.Producer, s.Clock.Name, s.Clock.Kind, s.Spans, s.GPUOps, s.Samples)
			if s.Host != "" {
				fmt.Fprintf(b, " host=%s", s.Host)
			}
			b.WriteByte('\n')
			for _, a := range s.Anchors {
				fmt.Fprintf(b, "  anchor kind=%d local=%d ref=[%d,%d]\n", a.Kind, a.Local, a.RefLow, a.RefHigh)
			}
		}
	}
	for i, r := range t.Resources {
		fmt.Fprintf(b, "resource %d%s\n", i, t.dumpAttrs(r.Attrs))
	}
	for i, s := range t.Scopes {
		fmt.Fprintf(b, "scope %d name=%q version=%q%s\n", i, t.Str(s.Name), t.Str(s.Version), t.dumpAttrs(s.Attrs))
	}
	for r := range t.CPURecords() {
		if c, ok := r.Call(); ok {
			t.dumpCall(b, &t.APICalls[c])
			continue
		}
		i, _ := r.Span()
		s := &t.Spans[i]
		fmt.Fprintf(b, "span %s/%s parent=%s name=%q kind=%s origin=%s start=%d end=%d status=%s",
			s.TraceID, s.ID, s.Parent, t.Str(s.Name), s.Kind, s.Origin, s.Start, s.End, s.Status)
		if s.StatusMsg != 0 {
			fmt.Fprintf(b, " status_msg=%q", t.Str(s.StatusMsg))
		}
		if s.Resource >= 0 {
			fmt.Fprintf(b, " resource=%d", s.Resource)
		}
		if s.Scope >= 0 {
			fmt.Fprintf(b, " scope=%d", s.Scope)
		}
		if s.Pid != 0 || s.Tid != 0 {
			fmt.Fprintf(b, " pid=%d tid=%d", s.Pid, s.Tid)
		}
		b.WriteString(t.dumpAttrs(t.SpanAttrs(s)))
		b.WriteByte('\n')
		for _, e := range t.Events(s) {
			fmt.Fprintf(b, "  event time=%d name=%q%s\n", e.Time, t.Str(e.Name), t.dumpAttrs(t.EventAttrs(&e)))
		}
		for _, l := range t.Links(s) {
			fmt.Fprintf(b, "  link %s/%s%s\n", l.TraceID, l.SpanID, t.dumpAttrs(t.LinkAttrs(&l)))
		}
	}
	for i := range t.GPUOps {
		o := &t.GPUOps[i]
		sh := t.ShapeOf(o)
		fmt.Fprintf(b, "gpu %s device=%d stream=%d pid=%d start=%d end=%d name=%q correlation=%d",
			o.Kind, o.Device, o.Stream, o.Pid, o.Start, o.End, t.Str(o.Name), o.Correlation)
		switch o.Kind {
		case OpKernel:
			if o.ShortName != 0 {
				fmt.Fprintf(b, " short=%q", t.Str(o.ShortName))
			}
			fmt.Fprintf(b, " grid=%d,%d,%d block=%d,%d,%d", sh.Grid[0], sh.Grid[1], sh.Grid[2], sh.Block[0], sh.Block[1], sh.Block[2])
			if sh.GraphID != 0 {
				fmt.Fprintf(b, " graph=%d", sh.GraphID)
			}
		case OpGraph:
			fmt.Fprintf(b, " graph=%d", sh.GraphID)
		case OpMemcpy, OpMemset:
			fmt.Fprintf(b, " bytes=%d copy=%s", sh.Bytes, o.Copy)
		}
		b.WriteByte('\n')
	}
	for i := range t.Samples {
		s := &t.Samples[i]
		fmt.Fprintf(b, "sample time=%d metric=%q device=%d instance=%d pid=%d value=%s\n",
			s.Time, t.Str(s.Metric), s.Device, s.Instance, s.Pid, strconv.FormatFloat(s.Value, 'g', -1, 64))
	}
	for i := range t.MemoryEvents {
		m := &t.MemoryEvents[i]
		fmt.Fprintf(b, "memory %s time=%d kind=%s device=%d pid=%d address=%#x bytes=%d correlation=%d\n",
			m.Op, m.Time, m.Kind, m.Device, m.Pid, m.Address, m.Bytes, m.Correlation)
	}
	for _, d := range t.Devices {
		fmt.Fprintf(b, "device %d name=%q uuid=%q sms=%d memory=%d\n", d.ID, d.Name, d.UUID, d.SMs, d.MemoryBytes)
	}
	for _, p := range t.Processes {
		fmt.Fprintf(b, "process %d name=%q\n", p.Pid, p.Name)
	}
	for _, th := range t.Threads {
		fmt.Fprintf(b, "thread %d/%d name=%q\n", th.Pid, th.Tid, th.Name)
	}
	if opts.Warnings {
		for _, w := range t.Warnings.List {
			fmt.Fprintf(b, "warning %s\n", w)
		}
	}
	return b.Flush()
}

// dumpCall writes an API call as the span it was before calls had a table
// of their own, so that dumps stay comparable.
func (t *Trace) dumpCall(b *bufio.Writer, c *APICall) {
	fmt.Fprintf(b, "span %s/%s parent=%s name=%q kind=%s origin=%s start=%d end=%d status=%s",
		TraceID{}, SpanID{}, SpanID{}, t.Str(c.Name), SpanKindUnspecified, c.Origin, c.Start, c.End, StatusUnset)
	if c.Pid != 0 || c.Tid != 0 {
		fmt.Fprintf(b, " pid=%d tid=%d", c.Pid, c.Tid)
	}
	if c.Correlation != 0 {
		fmt.Fprintf(b, " correlation=%d", c.Correlation)
	}
	if c.Return != 0 {
		fmt.Fprintf(b, " %q=%d", APIReturnKey, c.Return)
	}
	b.WriteByte('\n')
}

func (t *Trace) dumpAttrs(as []Attr) string {
	if len(as) == 0 {
		return ""
	}
	buf := make([]byte, 0, 32*len(as))
	for _, a := range as {
		buf = append(buf, ' ')
		buf = strconv.AppendQuote(buf, t.Str(a.Key))
		buf = append(buf, '=')
		buf = append(buf, t.FormatValue(a.Value())...)
	}
	return string(buf)
}
