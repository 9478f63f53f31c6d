package attribution

import (
	"cmp"
	"path/filepath"
	"slices"
	"strings"

	"github.com/llmprof/llmprof/align"
	"github.com/llmprof/llmprof/ingest"
	"github.com/llmprof/llmprof/internal/spill"
)

// devKey is a GPU's identity: the host (or capture) it belongs to, an index
// into hostMap.labels, and its device index there. Device 0 of one machine
// is not device 0 of another.
type devKey struct {
	host int
	dev  int16
}

// hostMap resolves each source to the host its GPU records belong to.
type hostMap struct {
	bySource []int    // source → index into labels
	labels   []string // "host 1a2b3c4d" or "capture <file>"; "" for a lone capture
	names    []string // the labels, never blanked (GPU.Hosts)
	joined   []bool   // per label: its sources are on the reference clock
}

// GPUHost is one machine (or capture) of the GPU section and its inputs.
type GPUHost struct {
	Name    string   `json:"name"`
	Sources []string `json:"sources"`
	// Joined is false when the inputs of this host could not be aligned to
	// the reference clock: its records stay on their own clock.
	Joined bool `json:"joined"`
}

// gpuHosts groups the sources by the machine that recorded them: by the
// host identity the input states (ingest.Source.Host), else each source is
// its own capture session. A source whose clock could not be aligned (ar
// says it is not joinable) is never grouped with another, even on the same
// host: its times are not comparable with theirs.
func gpuHosts(t *ingest.Trace, ar *align.Result) hostMap {
	m := hostMap{bySource: make([]int, len(t.Sources))}
	index := map[string]int{}
	perHost := map[string]int{}
	for i := range t.Sources {
		perHost[t.Sources[i].Host]++
	}
	for i := range t.Sources {
		s := &t.Sources[i]
		label := "capture " + filepath.Base(s.Path)
		if s.Host != "" {
			label = "host " + s.Host
		}
		joined := ar == nil || ar.Joinable(ingest.SourceID(i))
		if !joined && s.Host != "" && perHost[s.Host] > 1 {
			// Same machine, but its clock is not comparable with the others'.
			label += " (" + filepath.Base(s.Path) + ")"
		}
		k, ok := index[label]
		if !ok {
			k = len(m.labels)
			index[label] = k
			m.labels = append(m.labels, label)
			m.names = append(m.names, label)
			m.joined = append(m.joined, true)
		}
		m.joined[k] = m.joined[k] && joined
		m.bySource[i] = k
	}
	// One capture that names no host has nothing to be told apart from:
	// it stays unlabelled.
	if hosts := m.list(t); len(hosts) == 1 && !strings.HasPrefix(hosts[0].Name, "host ") {
		for i := range m.labels {
			m.labels[i] = ""
		}
	}
	return m
}

func (m hostMap) of(src ingest.SourceID) int {
	if int(src) < len(m.bySource) {
		return m.bySource[src]
	}
	return -1
}

func (m hostMap) label(host int) string {
	if host >= 0 && host < len(m.labels) {
		return m.labels[host]
	}
	return ""
}

// list returns the hosts that hold GPU ops, with their input files.
func (m hostMap) list(t *ingest.Trace) []GPUHost {
	has := make([]bool, len(m.labels))
	// One pass over the ops, dropping the pages passed when the process is
	// over its memory budget (spill.Behind).
	behind := spill.DropBehind(t.GPUOps)
	for i := range t.GPUOps {
		behind.Passed(i)
		if h := m.of(t.GPUOps[i].Source); h >= 0 {
			has[h] = true
		}
	}
	out := []GPUHost{}
	for h, label := range m.names {
		if !has[h] {
			continue
		}
		gh := GPUHost{Name: label, Joined: m.joined[h]}
		for src, sh := range m.bySource {
			if sh == h {
				gh.Sources = append(gh.Sources, t.Sources[src].Path)
			}
		}
		out = append(out, gh)
	}
	slices.SortFunc(out, func(a, b GPUHost) int { return cmp.Compare(a.Name, b.Name) })
	return out
}
