//go:build !linux

package record

import "fmt"

// NVMLBinding off Linux: the recorder has no NVML there.
const NVMLBinding = "none (not Linux)"

// openNVML off Linux: libnvidia-ml is a Linux library here, so this build
// records everything but GPU telemetry and the manifest says why.
func openNVML(NVMLOptions) (gpuSampler, error) {
	return nil, fmt.Errorf("%w: llmprof records NVML on Linux only", ErrNVMLUnavailable)
}
