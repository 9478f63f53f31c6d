//go:build !linux || !cgo

package record

import "fmt"

// openNVML without cgo (or off Linux): go-nvml needs cgo to load
// libnvidia-ml, so this build records everything but GPU telemetry and the
// manifest says why.
func openNVML(NVMLOptions) (gpuSampler, error) {
	return nil, fmt.Errorf("%w: llmprof was built without cgo (or not for Linux); rebuild with CGO_ENABLED=1 on Linux for GPU telemetry", ErrNVMLUnavailable)
}
