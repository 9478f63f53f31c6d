//go:build !unix

package otlp_test

import "time"

// cpuTime is not measured on this platform.
func cpuTime() time.Duration { return 0 }
