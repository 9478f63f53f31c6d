package record

import (
	"errors"
	"fmt"
)

// CommandLine is `llmprof record`'s command line (cmd/llmprof/record.go
// binds its flags here): the Options as the flags set them, and the flags
// whose values Resolve turns into Options.
type CommandLine struct {
	Options
	// Listen is --listen: the receivers' host, or host:port naming the gRPC
	// receiver's port.
	Listen string
	// Scrape are the --scrape URL[@interval] targets.
	Scrape []string
	// TorchProfiler is --torch-profiler[=DIR]: "" off, TorchProfilerDefault
	// for the capture's torch/ folder, else the folder.
	TorchProfiler string
}

// TorchProfilerDefault is --torch-profiler given without a folder.
const TorchProfilerDefault = "<capture>/torch"

// torchProfilerFlags need --torch-profiler.
var torchProfilerFlags = []string{"server", "profile-url", "profile-at", "profile-duration", "profile-flush-timeout", "profile-record-shapes", "profile-with-stack", "profile-memory"}

// Resolve checks the command line and returns the recorder's options:
// the receivers' addresses, the scrape targets and the torch profiler's
// folder filled in. changed reports whether a flag was given. Every error
// is a mistake in the command line (the command reports it as a usage
// error), found before anything starts.
func (c *CommandLine) Resolve(changed func(flag string) bool) (Options, error) {
	o := c.Options
	switch o.Protocol {
	case ProtocolGRPC, ProtocolHTTPProtobuf, ProtocolHTTPJSON:
	default:
		return o, fmt.Errorf("--otlp-protocol %q: want grpc, http/protobuf or http/json", o.Protocol)
	}
	if c.TorchProfiler == "" {
		for _, name := range torchProfilerFlags {
			if changed(name) {
				return o, fmt.Errorf("--%s needs --torch-profiler", name)
			}
		}
	}
	tp := &o.TorchProfiler
	switch tp.Server {
	case "", ServerVLLM, ServerSGLang:
	default:
		return o, fmt.Errorf("--server %q: want vllm or sglang", tp.Server)
	}
	if c.TorchProfiler != "" && tp.Server == "" && DetectServer(o.Command) == "" {
		return o, fmt.Errorf("--torch-profiler: %q is neither vLLM nor SGLang as far as its command line says; name the server with --server vllm|sglang", o.Command[0])
	}
	if o.CUPTI.Enabled {
		if err := CUPTIConflict(o.Nsys, c.TorchProfiler != ""); err != nil {
			return o, err
		}
	}
	if !o.CUPTI.Enabled && changed("cupti-flush-interval") {
		return o, errors.New("--cupti-flush-interval needs --cupti")
	}
	if o.NVML.Disable && o.NVML.Require {
		return o, errors.New("--no-nvml and --require-gpu contradict each other")
	}
	if err := c.resolveListen(&o); err != nil {
		return o, err
	}
	for _, s := range c.Scrape {
		st, err := ParseScrapeTarget(s)
		if err != nil {
			return o, err
		}
		o.Scrapes = append(o.Scrapes, st)
	}
	tp.Enabled, tp.Dir = c.TorchProfiler != "", c.TorchProfiler
	if tp.Dir == TorchProfilerDefault {
		tp.Dir = ""
	}
	return o, nil
}

// resolveListen sets the receivers' addresses from --listen, --otlp-grpc
// and --otlp-http.
func (c *CommandLine) resolveListen(o *Options) error {
	host, port, err := ParseListen(c.Listen)
	if err != nil {
		return fmt.Errorf("--listen: %w", err)
	}
	if port != "" {
		// --listen HOST:PORT, as a collector's endpoint: the port is the
		// gRPC receiver's.
		if o.GRPCAddr != "" {
			return fmt.Errorf("--listen %s names a port and --otlp-grpc %s another; give the port once", c.Listen, o.GRPCAddr)
		}
		o.GRPCAddr = ":" + port
	}
	if o.GRPCAddr, err = ListenAddr(host, o.GRPCAddr); err != nil {
		return fmt.Errorf("--otlp-grpc: %w", err)
	}
	if o.HTTPAddr, err = ListenAddr(host, o.HTTPAddr); err != nil {
		return fmt.Errorf("--otlp-http: %w", err)
	}
	return nil
}
