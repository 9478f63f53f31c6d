package record

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"

	"golang.org/x/sys/unix"
)

// ManifestFile is the name of the manifest inside a capture directory; its
// presence (with Format FormatName) is what makes a directory a capture.
const ManifestFile = "manifest.json"

// FormatName is the manifest's "format" value.
const FormatName = "llmprof-capture"

// Capture statuses. A manifest is written with StatusRecording at the start
// and replaced at the end; a reader that still finds StatusRecording is
// looking at a capture whose recorder was killed (or is still running), and
// reports it as interrupted.
const (
	StatusRecording   = "recording"
	StatusComplete    = "complete"     // the child exited 0 (or --duration ended the run)
	StatusChildFailed = "child_failed" // the child exited non-zero or was killed by a signal record did not send
	StatusInterrupted = "interrupted"  // record was told to stop (SIGINT/SIGTERM/SIGHUP) and stopped the child
	StatusFailed      = "failed"       // record itself failed (e.g. the child could not start)
)

// Manifest describes a capture: what ran, where, on which clocks, what was
// sampled and which files hold it. It is JSON so that people and scripts can
// read it without llmprof.
type Manifest struct {
	Format        string `json:"format"`
	SchemaVersion int    `json:"schema_version"`
	CaptureID     string `json:"capture_id"`
	Status        string `json:"status"`
	// StatusDetail says why, in words ("child exited with status 3").
	StatusDetail string       `json:"status_detail,omitempty"`
	Tool         ToolInfo     `json:"tool"`
	Host         HostInfo     `json:"host"`
	Recorder     RecorderInfo `json:"recorder"`
	Command      CommandInfo  `json:"command"`
	Clock        ClockInfo    `json:"clock"`
	NVML         NVMLInfo     `json:"nvml"`
	GPUs         []GPUInfo    `json:"gpus"`
	Sampling     SamplingInfo `json:"sampling"`
	OTLP         OTLPInfo     `json:"otlp"`
	Files        []FileInfo   `json:"files"`
	External     ExternalInfo `json:"external"`
	Drops        DropInfo     `json:"drops"`
}

// ToolInfo names the recorder.
type ToolInfo struct {
	Name        string `json:"name"`
	Version     string `json:"version"`
	Go          string `json:"go"`
	NVMLBinding string `json:"nvml_binding"`
}

// HostInfo identifies the machine; BootID scopes the monotonic clocks.
type HostInfo struct {
	Hostname string `json:"hostname"`
	Kernel   string `json:"kernel,omitempty"`
	BootID   string `json:"boot_id,omitempty"`
	CPUModel string `json:"cpu_model,omitempty"`
	NProc    int    `json:"nproc"`
}

// RecorderInfo identifies the recorder process, so a reader can tell a
// capture still being written from one whose recorder died.
type RecorderInfo struct {
	Pid       int    `json:"pid"`
	StartedAt string `json:"started_at"`
}

// CommandInfo is the recorded child.
type CommandInfo struct {
	// Argv is the command as the user gave it; Exec is what actually ran
	// (placeholders substituted, wrapped by nsys).
	Argv     []string          `json:"argv"`
	Exec     []string          `json:"exec,omitempty"`
	Cwd      string            `json:"cwd,omitempty"`
	Pid      int               `json:"pid,omitempty"`
	ExitCode *int              `json:"exit_code,omitempty"`
	Signal   string            `json:"signal,omitempty"`
	EnvAdded map[string]string `json:"env_added,omitempty"`
	// EnvKept lists OTEL variables the user had set and record left alone
	// (--keep-otel-env).
	EnvKept []string `json:"env_kept,omitempty"`
}

// ClockSnapshot is a ClockPair in the manifest.
type ClockSnapshot struct {
	RealtimeNs    int64 `json:"realtime_ns"`
	MonotonicNs   int64 `json:"monotonic_ns"`
	BoottimeNs    int64 `json:"boottime_ns"`
	MonotonicRaw  int64 `json:"monotonic_raw_ns"`
	UncertaintyNs int64 `json:"uncertainty_ns"`
}

func snapshotOf(p ClockPair) *ClockSnapshot {
	return &ClockSnapshot{RealtimeNs: p.RealMidNs(), MonotonicNs: p.MonoNs, BoottimeNs: p.BootNs,
		MonotonicRaw: p.MonoRawNs, UncertaintyNs: p.Uncertainty()}
}

// ClockInfo holds the start and end snapshots (all of them are in
// clock.arrows) and what the NVML timestamps are assumed to be.
type ClockInfo struct {
	Start              *ClockSnapshot `json:"start,omitempty"`
	End                *ClockSnapshot `json:"end,omitempty"`
	IntervalMs         int64          `json:"interval_ms"`
	NVMLTimestampClock string         `json:"nvml_timestamp_clock"`
}

// NVMLInfo says whether NVML telemetry was captured and, if not, why.
type NVMLInfo struct {
	Available         bool   `json:"available"`
	Reason            string `json:"reason,omitempty"`
	DriverVersion     string `json:"driver_version,omitempty"`
	NVMLVersion       string `json:"nvml_version,omitempty"`
	CUDADriverVersion int    `json:"cuda_driver_version,omitempty"`
}

// GPUInfo describes one GPU as enumerated at the start.
type GPUInfo struct {
	Index            int      `json:"index"`
	UUID             string   `json:"uuid"`
	Name             string   `json:"name"`
	PCIBusID         string   `json:"pci_bus_id,omitempty"`
	Arch             string   `json:"arch,omitempty"`
	ComputeCap       string   `json:"cc,omitempty"`
	MemoryTotalBytes uint64   `json:"memory_total_bytes,omitempty"`
	MaxSMClockMHz    uint32   `json:"max_sm_clock_mhz,omitempty"`
	PowerLimitMW     uint32   `json:"power_limit_mw,omitempty"`
	NVLinks          int      `json:"nvlinks,omitempty"`
	GPMSupported     bool     `json:"gpm_supported"`
	MIG              *MIGInfo `json:"mig,omitempty"`
}

// MIGInfo lists a MIG-enabled GPU's instances.
type MIGInfo struct {
	Enabled   bool          `json:"enabled"`
	Instances []MIGInstance `json:"instances"`
}

// MIGInstance is one MIG device.
type MIGInstance struct {
	UUID string `json:"uuid"`
	GI   int    `json:"gi"`
	CI   int    `json:"ci"`
}

// SamplingInfo records the configured cadences.
type SamplingInfo struct {
	DeviceIntervalMs  int64 `json:"device_interval_ms"`
	DrainIntervalMs   int64 `json:"buffered_drain_ms"`
	GPMIntervalMs     int64 `json:"gpm_interval_ms"`
	ProcessIntervalMs int64 `json:"process_interval_ms"`
}

// OTLPInfo describes the receiver and what it took in.
type OTLPInfo struct {
	GRPCAddr string `json:"grpc_addr"`
	HTTPAddr string `json:"http_addr"`
	Protocol string `json:"protocol"`
	Requests int64  `json:"requests"`
	Spans    int64  `json:"spans"`
	// Rejected counts requests refused as malformed (the client was told).
	Rejected int64 `json:"rejected"`
	// SpansLost counts spans the receiver acknowledged that never reached
	// the disk (a write failure); Requests and Spans count what did.
	SpansLost int64 `json:"spans_lost,omitempty"`
	// Throttled counts exports told to retry later (the receiver's memory
	// budget or stream limit was reached); PeakBodyBytes is the most
	// request-body memory the receiver held at once.
	Throttled     int64 `json:"throttled,omitempty"`
	PeakBodyBytes int64 `json:"peak_body_bytes,omitempty"`
	Metrics       int64 `json:"metrics_requests,omitempty"`
	Logs          int64 `json:"logs_requests,omitempty"`
}

// pointedAtReceiver reports whether record told the command to export to
// its receiver: the OTEL endpoint variables, or a placeholder in its
// arguments.
func (m *Manifest) pointedAtReceiver() bool {
	if _, ok := m.Command.EnvAdded["OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"]; ok {
		return true
	}
	for _, a := range m.Command.Argv {
		if strings.Contains(a, "{otlp_") {
			return true
		}
	}
	return false
}

// ExternalInfo points at files other tools wrote into the capture.
type ExternalInfo struct {
	Nsys *NsysInfo `json:"nsys,omitempty"`
	// Torch lists the PyTorch profiler traces of `record --torch-profiler`.
	Torch *TorchProfilerInfo `json:"torch,omitempty"`
	// CUPTI lists the activity files of `record --cupti`.
	CUPTI *CUPTIInfo `json:"cupti,omitempty"`
}

// NsysInfo describes the nsys report embedded in the capture.
type NsysInfo struct {
	Report  string `json:"report,omitempty"`
	SQLite  string `json:"sqlite,omitempty"`
	Version string `json:"version,omitempty"`
	Error   string `json:"error,omitempty"`
}

// DropInfo counts what was lost. OTLP payloads are never dropped (the
// receiver applies back-pressure); sampler rows are, when a writer falls
// behind, and ticks are, when a poll takes longer than its interval.
type DropInfo struct {
	SamplerOverruns int64 `json:"sampler_overruns"`
	ChannelFull     int64 `json:"channel_full"`
}

// writeManifest replaces dir/manifest.json atomically: write a temporary
// file, fsync it, rename it over the old one and fsync the directory, so a
// crash leaves either the old or the new manifest, never half of one.
func writeManifest(dir string, m *Manifest) error {
	data, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return err
	}
	data = append(data, '\n')
	tmp, err := os.CreateTemp(dir, ".manifest-*.json")
	if err != nil {
		return err
	}
	_, werr := tmp.Write(data)
	merr := tmp.Chmod(0o644) // CreateTemp makes it private; a manifest is not
	serr := tmp.Sync()
	cerr := tmp.Close()
	if err := firstErr(werr, merr, serr, cerr); err != nil {
		os.Remove(tmp.Name())
		return fmt.Errorf("write manifest: %w", err)
	}
	if err := os.Rename(tmp.Name(), filepath.Join(dir, ManifestFile)); err != nil {
		os.Remove(tmp.Name())
		return fmt.Errorf("write manifest: %w", err)
	}
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

func firstErr(errs ...error) error {
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// maxManifestBytes bounds the manifest a reader takes in. A real one is a
// few KiB (tens with many GPUs and MIG instances).
const maxManifestBytes = 4 << 20

// ReadManifest reads and checks dir/manifest.json, which must be a regular
// file inside dir (a symlink to outside, a FIFO or a device is refused) of
// at most 4 MiB.
func ReadManifest(dir string) (*Manifest, error) {
	f, err := openInCapture(dir, ManifestFile)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxManifestBytes+1))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", ManifestFile, err)
	}
	if len(data) > maxManifestBytes {
		return nil, fmt.Errorf("%s: over %d MiB, not a capture manifest", ManifestFile, maxManifestBytes>>20)
	}
	var m Manifest
	if err := json.Unmarshal(data, &m); err != nil {
		return nil, fmt.Errorf("%s: not valid JSON: %w", ManifestFile, err)
	}
	if m.Format != FormatName {
		return nil, fmt.Errorf("%s: format is %q, not %q", ManifestFile, m.Format, FormatName)
	}
	if m.SchemaVersion > SchemaVersion {
		return nil, fmt.Errorf("%s: schema version %d is newer than this llmprof reads (%d); upgrade llmprof",
			ManifestFile, m.SchemaVersion, SchemaVersion)
	}
	return &m, nil
}

// hostInfo gathers what identifies this machine and boot.
func hostInfo() HostInfo {
	h := HostInfo{NProc: runtime.NumCPU()}
	h.Hostname, _ = os.Hostname()
	var u unix.Utsname
	if unix.Uname(&u) == nil {
		h.Kernel = unix.ByteSliceToString(u.Release[:])
	}
	if b, err := os.ReadFile("/proc/sys/kernel/random/boot_id"); err == nil {
		h.BootID = strings.TrimSpace(string(b))
	}
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for line := range bytes.Lines(b) {
			if k, v, ok := bytes.Cut(line, []byte(":")); ok && string(bytes.TrimSpace(k)) == "model name" {
				h.CPUModel = string(bytes.TrimSpace(v))
				break
			}
		}
	}
	return h
}

// verifyChecksum checks a capture's file against the size and sha256 its
// manifest states. Only the stated bytes are read, and the error says that
// the file differs, never what it holds (not even its hash).
func verifyChecksum(dir string, fi FileInfo) error {
	f, err := openInCapture(dir, fi.Path)
	if err != nil {
		return err
	}
	defer f.Close()
	if f.size != fi.Bytes {
		return fmt.Errorf("%s is %d bytes, the manifest says %d", fi.Path, f.size, fi.Bytes)
	}
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return fmt.Errorf("%s: %w", fi.Path, err)
	}
	if got := hex.EncodeToString(h.Sum(nil)); got != fi.SHA256 {
		return fmt.Errorf("%s: sha256 differs from the manifest's", fi.Path)
	}
	return nil
}
