package record

import (
	"context"
	"fmt"
	"net"
	"strconv"
	"strings"
	"time"
)

// DefaultListen is where the receivers bind unless told otherwise.
const DefaultListen = "127.0.0.1"

// ParseListen checks a --listen value: a host (IP literal or a name that
// resolves), optionally with a port (as a collector's endpoint is written,
// 0.0.0.0:4317), that this machine can bind. It returns the host and the
// port ("" when none was given). Every failure is the caller's mistake, to
// be reported before anything starts.
func ParseListen(listen string) (host, port string, err error) {
	if listen == "" {
		return DefaultListen, "", nil
	}
	host = listen
	if h, p, err := net.SplitHostPort(listen); err == nil {
		host, port = h, p
		if err := checkPort(port); err != nil {
			return "", "", fmt.Errorf("%q: %w", listen, err)
		}
	} else if strings.Count(listen, ":") == 1 {
		return "", "", fmt.Errorf("%q: want a host or host:port", listen)
	}
	if strings.HasPrefix(host, "[") && strings.HasSuffix(host, "]") {
		host = host[1 : len(host)-1]
	}
	if host == "" {
		return "", "", fmt.Errorf("%q: no host (0.0.0.0 means every interface)", listen)
	}
	if err := checkHost(host); err != nil {
		return "", "", err
	}
	return host, port, nil
}

// ListenAddr turns a receiver address flag into the address to bind. addr
// may be empty (a free port on listen), ":port", or "host:port". A
// non-loopback host is refused unless it is the listen host itself: the
// receiver takes whatever is sent to it into the capture, so exposing it to
// the network must be said explicitly (--listen 0.0.0.0), never implied by a
// port flag. The host must be one this machine can bind.
func ListenAddr(listen, addr string) (string, error) {
	if listen == "" {
		listen = DefaultListen
	}
	host, port := listen, "0"
	if addr != "" {
		h, p, err := net.SplitHostPort(addr)
		if err != nil {
			return "", fmt.Errorf("receiver address %q: want host:port or :port", addr)
		}
		if err := checkPort(p); err != nil {
			return "", fmt.Errorf("receiver address %q: %w", addr, err)
		}
		if h != "" {
			host = h
		}
		port = p
	}
	bind := net.JoinHostPort(host, port)
	if !isLoopback(host) && !strings.EqualFold(host, listen) {
		return "", fmt.Errorf("refusing to bind the OTLP receiver to %s, which is not loopback: anything that reaches it "+
			"lands in the capture; pass --listen %s to mean it", bind, host)
	}
	if err := checkHost(host); err != nil {
		return "", fmt.Errorf("receiver address %s: %w", bind, err)
	}
	return bind, nil
}

func checkPort(port string) error {
	if n, err := strconv.ParseUint(port, 10, 16); err != nil || (n == 0 && port != "0") {
		return fmt.Errorf("port %q is not a number from 0 to 65535", port)
	}
	return nil
}

// checkHost makes sure host resolves and is an address of this machine, by
// binding a free port on it for a moment.
func checkHost(host string) error {
	if net.ParseIP(host) == nil {
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		defer cancel()
		if _, err := net.DefaultResolver.LookupIPAddr(ctx, host); err != nil {
			return fmt.Errorf("host %q does not resolve: %w", host, err)
		}
	}
	ln, err := net.Listen(listenNetwork(host), net.JoinHostPort(host, "0"))
	if err != nil {
		return fmt.Errorf("cannot listen on host %q (not an address of this machine?): %w", host, err)
	}
	return ln.Close()
}

// listenNetwork binds an IPv4 address as IPv4 only: Go's "tcp" turns
// 0.0.0.0 into a dual-stack [::] socket, which then reads as an IPv6
// address. The IPv6 wildcard stays dual-stack; names pick their family.
func listenNetwork(host string) string {
	ip := net.ParseIP(host)
	switch {
	case ip == nil || ip.Equal(net.IPv6unspecified):
		return "tcp"
	case ip.To4() != nil:
		return "tcp4"
	}
	return "tcp6"
}

func listenHost(addr string) string {
	h, _, err := net.SplitHostPort(addr)
	if err != nil {
		return addr
	}
	return h
}

func isLoopback(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// dialable turns a listener's address into one a local client can dial.
// A wildcard listener is reached through loopback: IPv4's 127.0.0.1 first
// (always configured, while IPv6 loopback is often off in containers), and
// only what a test connection reaches is handed out.
func dialable(addr string) string {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return addr
	}
	ip := net.ParseIP(host)
	if ip == nil || !ip.IsUnspecified() {
		return addr
	}
	candidates := []string{"127.0.0.1", "::1"}
	if ip.To4() != nil {
		candidates = candidates[:1]
	}
	for _, c := range candidates {
		a := net.JoinHostPort(c, port)
		if conn, err := net.DialTimeout("tcp", a, time.Second); err == nil {
			conn.Close()
			return a
		}
	}
	return net.JoinHostPort(candidates[0], port)
}
