package record

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"github.com/llmprof/llmprof/ingest"
	"github.com/llmprof/llmprof/ingest/kineto"
	"github.com/llmprof/llmprof/ingest/otlp"
	"github.com/llmprof/llmprof/record/cupti"
)

// CaptureDecoder reads a capture directory written by Record into the
// model. It implements ingest.Decoder; the zero value is ready to use.
//
// A capture yields up to two sources, because its rows are stamped by two
// clocks:
//
//   - source 0, the capture itself (Format "llmprof-capture"), on the host's
//     realtime clock: the OTLP spans (decoded with ingest/otlp, clock domain
//     as that package names it) and the NVML samples the driver stamped
//     (ring-buffer samples, per-process utilization);
//   - source 1 (Format "llmprof-capture/monotonic"), on CLOCK_MONOTONIC: the
//     samples the recorder stamped (device telemetry, GPM, running
//     processes), with every clock pair as an ingest.AnchorClockPair (Local =
//     the monotonic read, [RefLow, RefHigh] = the realtime bracket), from
//     which align maps them onto the reference clock.
//
// The metric names are listed in docs/record.md. An nsys SQLite export
// embedded by `record --nsys` is decoded by whichever of Embedded recognizes
// it and merged in as a further source.
type CaptureDecoder struct {
	// Embedded decode files other tools wrote into the capture (the
	// command passes the nsys decoder). With none that recognizes such a
	// file, it is skipped with a warning.
	Embedded []ingest.Decoder
}

var _ ingest.Decoder = (*CaptureDecoder)(nil)

// Name is "capture".
func (*CaptureDecoder) Name() string { return "capture" }

// Sniff recognizes a directory holding a manifest.json whose format is
// llmprof-capture, and one whose manifest.json is a symlink out of it or
// not a regular file (Decode then refuses it, saying why).
func (*CaptureDecoder) Sniff(in *ingest.Input) bool {
	if !in.Dir {
		return false
	}
	f, err := openInCapture(in.Path, ManifestFile)
	if isUnsafePath(err) {
		// Claimed, so that Decode says what is wrong with it instead of
		// the directory being taken for a folder of other inputs.
		return true
	}
	if err != nil {
		return false
	}
	defer f.Close()
	var head struct {
		Format string `json:"format"`
	}
	// A manifest is a few KiB; the bound keeps a stray huge manifest.json
	// from being read whole just to be rejected.
	if json.NewDecoder(io.LimitReader(f, 1<<20)).Decode(&head) != nil {
		return false
	}
	return head.Format == FormatName
}

// Source formats of a capture.
const (
	SourceFormat          = "llmprof-capture"
	SourceFormatMonotonic = "llmprof-capture/monotonic"
)

// Decode reads the capture into t, whose Sources[0] names the directory.
// Only an unreadable manifest is an error; a capture cut off mid-write, a
// payload that does not decode, a table that is not what it should be are
// warnings, and everything else is kept.
func (d *CaptureDecoder) Decode(ctx context.Context, in *ingest.Input, t *ingest.Trace) error {
	c, err := OpenCapture(in.Path)
	if err != nil {
		return err
	}
	r := &captureReader{ctx: ctx, c: c, t: t}
	r.describe()
	if err := r.readOTLP(); err != nil {
		return err
	}
	for _, step := range []func() error{r.readClock, r.readDevice, r.readBuffered, r.readProcess, r.readGPM} {
		if err := step(); err != nil {
			return err
		}
	}
	r.devices()
	r.checkFiles()
	if err := d.decodeTorch(ctx, c, t); err != nil {
		return err
	}
	if err := decodeCUPTI(ctx, c, t); err != nil {
		return err
	}
	if err := d.decodeEmbedded(ctx, c, t); err != nil {
		return err
	}
	return d.decodeScrapes(ctx, c, t)
}

// captureReader carries one Decode.
type captureReader struct {
	ctx context.Context
	c   *Capture
	t   *ingest.Trace
	// mono is the monotonic source, once a recorder-stamped row needs it.
	mono    ingest.SourceID
	hasMono bool
	// anchors are kept until the monotonic source exists.
	anchors []ingest.ClockAnchor
}

const srcCapture ingest.SourceID = 0

func (r *captureReader) manifest() *Manifest { return r.c.Manifest }

func (r *captureReader) warnf(pos, code, format string, args ...any) {
	r.t.Warnf(srcCapture, pos, code, format, args...)
}

// describe fills the capture's source from the manifest and turns its
// status into warnings a report will show.
func (r *captureReader) describe() {
	m := r.manifest()
	src := &r.t.Sources[srcCapture]
	src.Format = SourceFormat
	src.Producer = strings.TrimSpace(m.Tool.Name + " " + m.Tool.Version)
	src.Host = ingest.HostID(m.Host.Hostname)
	src.Clock = ingest.ClockDomain{Name: "realtime@" + src.Host, Kind: ingest.ClockRealtime}
	src.Meta = map[string]string{
		"capture_id": m.CaptureID,
		"status":     m.Status,
		"host":       m.Host.Hostname,
	}
	if m.Command.ExitCode != nil {
		src.Meta["exit_code"] = strconv.Itoa(*m.Command.ExitCode)
	}
	if len(m.Command.Argv) > 0 {
		// The program only: arguments may hold tokens or paths a report
		// should not spread.
		src.Meta["command"] = filepath.Base(m.Command.Argv[0])
	}
	if m.NVML.Available {
		src.Meta["nvml"] = fmt.Sprintf("%d GPU(s), driver %s", len(m.GPUs), m.NVML.DriverVersion)
	} else {
		src.Meta["nvml"] = "unavailable: " + m.NVML.Reason
	}
	switch {
	case m.Status == StatusRecording && recorderRunning(m):
		r.warnf("", "capture-in-progress",
			"capture is still being recorded (recorder pid %d is running); reading what has been flushed so far", m.Recorder.Pid)
	case m.Status == StatusRecording:
		r.warnf("", "capture-interrupted",
			"capture was interrupted: the recorder never finished (manifest status is still %q; recorder pid %d is gone); every complete batch is read, rows still in open batches were lost",
			m.Status, m.Recorder.Pid)
	case m.Status == StatusFailed:
		r.warnf("", "capture-failed", "the recording failed: %s", m.StatusDetail)
	case m.Status == StatusChildFailed:
		r.warnf("", "capture-child-failed", "the recorded command failed: %s", m.StatusDetail)
	}
	if m.Drops.ChannelFull > 0 || m.Drops.SamplerOverruns > 0 {
		r.warnf("", "capture-drops", "NVML sampling fell behind: %d rows dropped, %d ticks skipped",
			m.Drops.ChannelFull, m.Drops.SamplerOverruns)
	}
	if m.Status != StatusRecording && m.OTLP.Requests == 0 && m.pointedAtReceiver() {
		r.warnf("", "capture-no-spans", "%s", noExportsNote(endpoints{grpc: m.OTLP.GRPCAddr, http: m.OTLP.HTTPAddr}))
	}
	if m.OTLP.Rejected > 0 {
		r.warnf("", "capture-otlp-rejected", "the receiver refused %d malformed OTLP export request(s)", m.OTLP.Rejected)
	}
}

// recorderRunning reports whether the recorder of an unfinished capture is
// still alive: same boot, and its pid exists. (A reused pid makes this say
// "in progress" for a dead recorder; the data read is the same either way.)
func recorderRunning(m *Manifest) bool {
	if m.Recorder.Pid <= 0 || m.Host.BootID == "" || m.Host.BootID != hostInfo().BootID {
		return false
	}
	err := syscall.Kill(m.Recorder.Pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}

// monoSource returns the capture's monotonic source, creating it on first
// use with the clock pairs as anchors.
func (r *captureReader) monoSource() ingest.SourceID {
	if r.hasMono {
		return r.mono
	}
	m := r.manifest()
	boot := m.Host.BootID
	if len(boot) > 8 {
		boot = boot[:8]
	}
	r.mono, r.hasMono = ingest.SourceID(len(r.t.Sources)), true
	r.t.Sources = append(r.t.Sources, ingest.Source{
		Path:     r.t.Sources[srcCapture].Path,
		Format:   SourceFormatMonotonic,
		Producer: r.t.Sources[srcCapture].Producer,
		// The monotonic clock is per host and per boot.
		Host:    r.t.Sources[srcCapture].Host,
		Clock:   ingest.ClockDomain{Name: "monotonic@" + r.t.Sources[srcCapture].Host + "/" + boot, Kind: ingest.ClockMonotonic},
		Anchors: r.anchors,
		Meta:    map[string]string{"capture_id": m.CaptureID},
	})
	return r.mono
}

// tableWarn turns an incomplete table read into a warning.
func (r *captureReader) tableWarn(table string, res TableRead) {
	if res.Truncated {
		r.warnf(TableFile(table), "capture-truncated-table",
			"cut short after %d rows in %d complete batches (%v); the rest of the table is lost", res.Rows, res.Batches, res.Err)
	}
}

// readTable reads one table, turning a broken file into a warning: a
// capture's other tables are worth having even if one is damaged.
func readTable[R any](r *captureReader, table string, fn func(i int, row *R)) error {
	i := 0
	res, err := ReadTable(r.c, func(row *R) error {
		if i%4096 == 0 {
			if err := r.ctx.Err(); err != nil {
				return err
			}
		}
		fn(i, row)
		i++
		return nil
	})
	if err != nil {
		if ctxErr := r.ctx.Err(); ctxErr != nil {
			return ctxErr
		}
		if isUnsafePath(err) {
			r.warnf(TableFile(table), "capture-unsafe-path", "%v; table not read", err)
			return nil
		}
		r.warnf(TableFile(table), "capture-bad-table", "%v; table skipped after %d rows", err, i)
		return nil
	}
	r.tableWarn(table, res)
	return nil
}

func (r *captureReader) readOTLP() error {
	var logs int
	metrics := otlp.NewMetricsPayloads(r.t, srcCapture)
	defer metrics.Close()
	err := readTable(r, TableOTLP, func(i int, p *OTLPPayload) {
		if p.Signal == SignalLogs {
			logs++
			return
		}
		pos := "row " + strconv.Itoa(i)
		enc, ok := otlp.ParseEncoding(p.Encoding)
		if !ok {
			r.warnf(TableFile(TableOTLP), "bad-otlp-payload", "%s: unknown encoding %q (want %s or %s); read as protobuf", pos, p.Encoding, otlp.Proto, otlp.JSON)
			enc = otlp.Proto
		}
		if p.Signal == SignalMetrics {
			if err := metrics.Decode(p.Payload, enc, pos); err != nil {
				r.warnf(TableFile(TableOTLP), "bad-otlp-payload", "metrics: %v", err)
			}
			return
		}
		if err := otlp.DecodePayload(r.t, srcCapture, p.Payload, enc, pos); err != nil {
			r.warnf(TableFile(TableOTLP), "bad-otlp-payload", "%v", err)
		}
	})
	if err != nil {
		return err
	}
	src := &r.t.Sources[srcCapture]
	if src.Spans > 0 {
		// The payloads' clock; the host stays the manifest's.
		src.Clock, _ = otlp.ClockDomain(r.t, srcCapture)
	}
	if logs > 0 {
		src.Meta["otlp_other"] = fmt.Sprintf("%d logs export requests kept, not decoded", logs)
	}
	return nil
}

func (r *captureReader) readClock() error {
	return readTable(r, TableClock, func(_ int, p *ClockPair) {
		r.anchors = append(r.anchors, ingest.ClockAnchor{
			Kind: ingest.AnchorClockPair, Local: p.MonoNs, RefLow: p.RealLoNs, RefHigh: p.RealHiNs,
		})
	})
}

// sample appends one sample; an absent value (NULL column) adds nothing.
func (r *captureReader) sample(src ingest.SourceID, at int64, metric ingest.StrID, v float64, gpu int16, instance int16, pid uint32) {
	r.t.Samples = append(r.t.Samples, ingest.Sample{
		Time: at, Value: v, Metric: metric, Pid: pid, Device: gpu, Instance: instance, Source: src,
	})
	r.t.Sources[src].Samples++
}

// deviceMetrics maps the gpu_device columns to metric names, in the units
// the names say (NVML's mW, mJ and KiB converted).
var deviceMetrics = []struct {
	name string
	get  func(*DeviceSample) (float64, bool)
}{
	{"nvml.gpu_util_pct", func(d *DeviceSample) (float64, bool) { return opt(d.UtilGPUPct, 1) }},
	{"nvml.mem_util_pct", func(d *DeviceSample) (float64, bool) { return opt(d.UtilMemPct, 1) }},
	{"nvml.mem_used_bytes", func(d *DeviceSample) (float64, bool) { return opt(d.MemUsedBytes, 1) }},
	{"nvml.mem_reserved_bytes", func(d *DeviceSample) (float64, bool) { return opt(d.MemReservedBytes, 1) }},
	{"nvml.sm_clock_mhz", func(d *DeviceSample) (float64, bool) { return opt(d.SMClockMHz, 1) }},
	{"nvml.mem_clock_mhz", func(d *DeviceSample) (float64, bool) { return opt(d.MemClockMHz, 1) }},
	{"nvml.power_w", func(d *DeviceSample) (float64, bool) { return opt(d.PowerAvgMW, 1e-3) }},
	{"nvml.power_instant_w", func(d *DeviceSample) (float64, bool) { return opt(d.PowerInstantMW, 1e-3) }},
	{"nvml.energy_j", func(d *DeviceSample) (float64, bool) { return opt(d.EnergyMJ, 1e-3) }},
	{"nvml.clocks_event_reasons", func(d *DeviceSample) (float64, bool) { return opt(d.ClocksEventReasons, 1) }},
	{"nvml.temp_c", func(d *DeviceSample) (float64, bool) { return opt(d.TempC, 1) }},
	{"nvml.pcie_tx_bytes", func(d *DeviceSample) (float64, bool) { return opt(d.PCIeTXBytes, 1) }},
	{"nvml.pcie_rx_bytes", func(d *DeviceSample) (float64, bool) { return opt(d.PCIeRXBytes, 1) }},
	{"nvml.nvlink_tx_bytes", func(d *DeviceSample) (float64, bool) { return opt(d.NVLinkTXKiB, 1024) }},
	{"nvml.nvlink_rx_bytes", func(d *DeviceSample) (float64, bool) { return opt(d.NVLinkRXKiB, 1024) }},
	{"nvml.poll_latency_ns", func(d *DeviceSample) (float64, bool) { return float64(d.PollLatencyNs), true }},
}

func opt[T uint32 | uint64](p *T, scale float64) (float64, bool) {
	if p == nil {
		return 0, false
	}
	return float64(*p) * scale, true
}

func instanceOf[T int32 | uint32](gi *T) int16 {
	if gi == nil {
		return -1
	}
	return int16(*gi)
}

func (r *captureReader) readDevice() error {
	ids := make([]ingest.StrID, len(deviceMetrics))
	for i, m := range deviceMetrics {
		ids[i] = r.t.Strings.Intern(m.name)
	}
	return readTable(r, TableGPUDevice, func(_ int, d *DeviceSample) {
		src := r.monoSource()
		inst := instanceOf(d.GI)
		for i, m := range deviceMetrics {
			if v, ok := m.get(d); ok {
				r.sample(src, d.MonoNs, ids[i], v, d.GPU, inst, 0)
			}
		}
	})
}

// metricNames interns the names of one metric table once per decode; a
// code the table does not know gets a name made from it, and scale 1.
type metricNames[K comparable] struct {
	t       *ingest.Trace
	defs    map[K]metricDef[K]
	ids     map[K]ingest.StrID
	unknown string // format of the name of an unknown code
}

func newMetricNames[K comparable](t *ingest.Trace, defs []metricDef[K], unknown string) *metricNames[K] {
	m := &metricNames[K]{t: t, defs: map[K]metricDef[K]{}, ids: map[K]ingest.StrID{}, unknown: unknown}
	for _, d := range defs {
		m.defs[d.code] = d
	}
	return m
}

func (m *metricNames[K]) get(code K) (ingest.StrID, float64) {
	d, known := m.defs[code]
	if !known {
		d = metricDef[K]{code: code, name: fmt.Sprintf(m.unknown, code), scale: 1}
		m.defs[code] = d
	}
	id, ok := m.ids[code]
	if !ok {
		id = m.t.Strings.Intern(d.name)
		m.ids[code] = id
	}
	return id, d.scale
}

func (r *captureReader) readBuffered() error {
	names := newMetricNames(r.t, bufferedTypes, "nvml.buffered.type%d")
	return readTable(r, TableGPUBuffered, func(_ int, b *BufferedSample) {
		id, scale := names.get(b.SamplingType)
		// Stamped by the driver: NVML's CPU timestamp, realtime µs.
		r.sample(srcCapture, int64(b.NVMLTimestampUs)*1000, id, b.Value*scale, b.GPU, -1, 0)
	})
}

func (r *captureReader) readProcess() error {
	smUtil := r.t.Strings.Intern(ingest.MetricNVMLProcessSMUtil)
	memUtil := r.t.Strings.Intern("nvml.process.mem_util_pct")
	used := r.t.Strings.Intern("nvml.process.used_memory_bytes")
	return readTable(r, TableGPUProcess, func(_ int, p *ProcessSample) {
		if p.NVMLTimestampUs != nil {
			at := int64(*p.NVMLTimestampUs) * 1000
			if v, ok := opt(p.SMUtilPct, 1); ok {
				r.sample(srcCapture, at, smUtil, v, p.GPU, -1, p.Pid)
			}
			if v, ok := opt(p.MemUtilPct, 1); ok {
				r.sample(srcCapture, at, memUtil, v, p.GPU, -1, p.Pid)
			}
		}
		if v, ok := opt(p.UsedMemoryBytes, 1); ok {
			r.sample(r.monoSource(), p.MonoNs, used, v, p.GPU, instanceOf(p.GI), p.Pid)
		}
	})
}

func (r *captureReader) readGPM() error {
	names := newMetricNames(r.t, gpmMetrics, "gpm.metric%d")
	return readTable(r, TableGPUGPM, func(_ int, g *GPMSample) {
		id, scale := names.get(g.MetricID)
		// A GPM metric is an average over [T0, T1]; like NVML's own
		// utilizations it is stamped at the end of its period.
		r.sample(r.monoSource(), g.T1MonoNs, id, g.Value*scale, g.GPU, instanceOf(g.GI), 0)
	})
}

// devices lists the GPUs and the recorded process.
func (r *captureReader) devices() {
	m := r.manifest()
	for _, g := range m.GPUs {
		r.t.Devices = append(r.t.Devices, ingest.Device{
			ID: int16(g.Index), Name: g.Name, UUID: g.UUID, MemoryBytes: g.MemoryTotalBytes, Source: srcCapture,
		})
	}
	if m.Command.Pid > 0 && len(m.Command.Argv) > 0 {
		r.t.Processes = append(r.t.Processes, ingest.Process{
			Pid: uint32(m.Command.Pid), Name: filepath.Base(m.Command.Argv[0]), Source: srcCapture,
		})
	}
}

// checkFiles compares a finished capture's files with the manifest's
// checksums: a mismatch means a file changed after recording.
func (r *captureReader) checkFiles() {
	if r.c.Interrupted() {
		return // the manifest predates the data
	}
	seen := map[string]bool{}
	for _, f := range r.manifest().Files {
		if f.SHA256 == "" || seen[f.Path] {
			continue
		}
		seen[f.Path] = true
		err := verifyChecksum(r.c.Dir, f)
		switch {
		case err == nil:
		case isUnsafePath(err):
			r.warnf(ManifestFile, "capture-unsafe-path", "files[]: %v; not read", err)
		default:
			r.warnf(f.Path, "capture-checksum", "%v: the file changed after recording", err)
		}
	}
}

// decodeEmbedded decodes an nsys SQLite export inside the capture and
// merges it in as a further source.
func (d *CaptureDecoder) decodeEmbedded(ctx context.Context, c *Capture, t *ingest.Trace) error {
	ns := c.Manifest.External.Nsys
	if ns == nil || ns.SQLite == "" {
		return nil
	}
	path, err := resolveInCapture(c.Dir, ns.SQLite)
	if err != nil {
		code := "capture-embedded"
		if isUnsafePath(err) {
			code = "capture-unsafe-path"
		}
		t.Warnf(srcCapture, ManifestFile, code, "external.nsys.sqlite: %v; not read", err)
		return nil
	}
	in, err := ingest.NewInput(path)
	if err != nil {
		t.Warnf(srcCapture, "", "capture-embedded", "nsys export %s: %v", ns.SQLite, err)
		return nil
	}
	var dec ingest.Decoder
	for _, e := range d.Embedded {
		if e.Sniff(in) {
			dec = e
			break
		}
	}
	if dec == nil {
		t.Warnf(srcCapture, "", "capture-embedded", "nsys export %s not decoded: no decoder for it in this build", ns.SQLite)
		return nil
	}
	sub := ingest.New()
	sub.Sources = []ingest.Source{{Path: path, Format: dec.Name()}}
	if err := dec.Decode(ctx, in, sub); err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		t.Warnf(srcCapture, "", "capture-embedded", "nsys export %s: %v", ns.SQLite, err)
		return nil
	}
	*t = *ingest.Merge(t, sub)
	return nil
}

// decodeTorch decodes the PyTorch profiler traces of `record
// --torch-profiler` (one per rank) with the Kineto decoder and merges each
// in as a further source: every rank is its own clock domain, aligned to the
// spans by its step annotations like any Kineto input (docs/kineto.md).
// Incomplete traces are skipped with a warning.
func (d *CaptureDecoder) decodeTorch(ctx context.Context, c *Capture, t *ingest.Trace) error {
	tp := c.Manifest.External.Torch
	if tp == nil {
		return nil
	}
	for _, f := range tp.Files {
		if !f.Complete {
			t.Warnf(srcCapture, f.Path, "capture-torch-incomplete", "torch profiler trace %s is incomplete (%s); not read", f.Path, f.Error)
			continue
		}
		path, err := resolveInCapture(c.Dir, f.Path)
		if err != nil {
			code := "capture-embedded"
			if isUnsafePath(err) {
				code = "capture-unsafe-path"
			}
			t.Warnf(srcCapture, ManifestFile, code, "external.torch.files: %v; not read", err)
			continue
		}
		in, err := ingest.NewInput(path)
		if err != nil {
			t.Warnf(srcCapture, f.Path, "capture-embedded", "torch profiler trace %s: %v", f.Path, err)
			continue
		}
		var dec ingest.Decoder = kineto.Decoder{}
		if !dec.Sniff(in) {
			t.Warnf(srcCapture, f.Path, "capture-embedded", "torch profiler trace %s is not a Kineto trace; not read", f.Path)
			continue
		}
		sub := ingest.New()
		sub.Sources = []ingest.Source{{Path: path, Format: dec.Name()}}
		if err := dec.Decode(ctx, in, sub); err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			t.Warnf(srcCapture, f.Path, "capture-embedded", "torch profiler trace %s: %v", f.Path, err)
			continue
		}
		*t = *ingest.Merge(t, sub)
	}
	return nil
}

// listCUPTIFiles is the activity files in the capture's CUPTI folder, by
// name, when the folder is a directory of the capture (not a link out of
// it); each is still opened through openInCapture.
func listCUPTIFiles(dir string) []CUPTIFile {
	st, err := os.Lstat(filepath.Join(dir, CUPTIDir))
	if err != nil || !st.IsDir() {
		return nil
	}
	entries, err := os.ReadDir(filepath.Join(dir, CUPTIDir))
	if err != nil {
		return nil
	}
	var out []CUPTIFile
	for _, e := range entries {
		if ok, _ := filepath.Match(cupti.FilePattern, e.Name()); ok && e.Type().IsRegular() {
			out = append(out, CUPTIFile{Path: CUPTIDir + "/" + e.Name()})
		}
	}
	return out
}

// decodeCUPTI decodes the activity files of `record --cupti`, one per CUDA
// process, each merged in as a further source. All of a capture's files
// share one clock domain (CUPTI's clock is per host and boot), anchored to
// the host's realtime by the clock pairs the library wrote; the launch ↔ op
// join is by pid and correlation ID, as for nsys. A file that does not
// decode is a warning naming it; the rest of the capture is kept.
func decodeCUPTI(ctx context.Context, c *Capture, t *ingest.Trace) error {
	info := c.Manifest.External.CUPTI
	if info == nil {
		return nil
	}
	boot := c.Manifest.Host.BootID
	if len(boot) > 8 {
		boot = boot[:8]
	}
	opts := cupti.Options{Host: t.Sources[srcCapture].Host, Boot: boot}
	finished := c.Manifest.Status != StatusRecording
	files := info.Files
	if !finished && len(files) == 0 {
		// The files are listed in the manifest when the recording ends; a
		// capture whose recorder died (or is still running) has them only
		// in its folder.
		files = listCUPTIFiles(c.Dir)
		if len(files) > 0 {
			t.Warnf(srcCapture, CUPTIDir, "capture-cupti", "the recording did not finish: %d CUPTI activity file(s) read from %s/ without a manifest entry; each process's last buffers may be missing", len(files), CUPTIDir)
		}
	}
	// One merge of every file: merging file by file would copy the trace
	// once per CUDA process.
	var subs []*ingest.Trace
	for _, fi := range files {
		if err := ctx.Err(); err != nil {
			return err
		}
		f, err := openInCapture(c.Dir, fi.Path)
		if err != nil {
			code := "capture-cupti"
			if isUnsafePath(err) {
				code = "capture-unsafe-path"
			}
			t.Warnf(srcCapture, ManifestFile, code, "external.cupti.files: %v; not read", err)
			continue
		}
		size := f.size
		if finished && fi.Bytes < size {
			// Bytes appended after the recording are not taken in.
			f.limitTo(fi.Bytes)
			size = fi.Bytes
		}
		sub := ingest.New()
		sub.Sources = []ingest.Source{{Path: filepath.Join(c.Dir, filepath.FromSlash(fi.Path))}}
		_, err = cupti.Decode(fi.Path, f, size, sub, opts)
		f.Close()
		if err != nil {
			t.Warnf(srcCapture, fi.Path, "capture-cupti", "%v; not read", err)
			continue
		}
		subs = append(subs, sub)
	}
	if len(subs) > 0 {
		*t = *ingest.Merge(append([]*ingest.Trace{t}, subs...)...)
	}
	if info.Error != "" {
		t.Warnf(srcCapture, ManifestFile, "capture-cupti", "--cupti: %s", info.Error)
	}
	return nil
}
