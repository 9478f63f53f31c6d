package record

import (
	"fmt"
	"net"
	"strings"
)

// DefaultListen is where the receivers bind unless told otherwise.
const DefaultListen = "127.0.0.1"

// ListenAddr turns a receiver address flag into the address to bind. addr
// may be empty (a free port on listen), ":port", or "host:port". A
// non-loopback host is refused unless it is the listen host itself: the
// receiver takes whatever is sent to it into the capture, so exposing it to
// the network must be said explicitly (--listen 0.0.0.0), never implied by a
// port flag.
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
	return bind, nil
}

func isLoopback(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
