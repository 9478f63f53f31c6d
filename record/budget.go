package record

import (
	"context"
	"errors"
	"net"
	"sync"
	"time"
)

// errOverBudget means a request's body did not fit in the receiver's memory
// budget within the wait: the client is told to retry later.
var errOverBudget = errors.New("the receiver's memory budget for request bodies is in use")

// memBudget is the receiver's one bound on memory held for request bodies,
// over every connection and both transports: bytes read, decompressed,
// decompressor windows, and payloads queued for the capture writer until the
// writer has copied them into a batch.
type memBudget struct {
	mu      sync.Mutex
	limit   int64
	used    int64
	peak    int64
	changed chan struct{} // closed and replaced on every release
}

func newMemBudget(limit int64) *memBudget {
	return &memBudget{limit: limit, changed: make(chan struct{})}
}

// acquire takes n bytes, waiting up to wait for others to release room.
func (b *memBudget) acquire(ctx context.Context, n int64, wait time.Duration) error {
	if n > b.limit {
		return errOverBudget
	}
	var timeout <-chan time.Time
	for {
		b.mu.Lock()
		if b.used+n <= b.limit {
			b.used += n
			b.peak = max(b.peak, b.used)
			b.mu.Unlock()
			return nil
		}
		changed := b.changed
		b.mu.Unlock()
		if timeout == nil {
			if wait <= 0 {
				return errOverBudget
			}
			t := time.NewTimer(wait)
			defer t.Stop()
			timeout = t.C
		}
		select {
		case <-changed:
		case <-timeout:
			return errOverBudget
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

func (b *memBudget) release(n int64) {
	if n == 0 {
		return
	}
	b.mu.Lock()
	b.used -= n
	close(b.changed)
	b.changed = make(chan struct{})
	b.mu.Unlock()
}

// usage returns the bytes held now and the most ever held at once.
func (b *memBudget) usage() (used, peak int64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.used, b.peak
}

// charge is what one request holds of the budget. The handler grows it as
// the body arrives; once the payload is queued, the capture writer releases
// it (OTLPPayload.releaseBody).
type charge struct {
	b    *memBudget
	ctx  context.Context
	wait time.Duration

	mu       sync.Mutex
	n        int64
	released bool
}

func (c *charge) grow(n int64) error {
	if err := c.b.acquire(c.ctx, n, c.wait); err != nil {
		return err
	}
	c.mu.Lock()
	c.n += n
	c.mu.Unlock()
	return nil
}

// give returns n of the bytes held.
func (c *charge) give(n int64) {
	c.mu.Lock()
	n = min(n, c.n)
	c.n -= n
	c.mu.Unlock()
	c.b.release(n)
}

// shrinkTo keeps only n bytes.
func (c *charge) shrinkTo(n int64) {
	c.mu.Lock()
	d := max(c.n-n, 0)
	c.mu.Unlock()
	c.give(d)
}

// release returns everything, once.
func (c *charge) release() {
	c.mu.Lock()
	if c.released {
		c.mu.Unlock()
		return
	}
	c.released = true
	n := c.n
	c.n = 0
	c.mu.Unlock()
	c.b.release(n)
}

// limitListener accepts at most n connections at a time; more wait in the
// kernel's backlog until one closes.
type limitListener struct {
	net.Listener
	slots     chan struct{}
	closed    chan struct{}
	closeOnce sync.Once
}

func newLimitListener(ln net.Listener, n int) *limitListener {
	return &limitListener{Listener: ln, slots: make(chan struct{}, n), closed: make(chan struct{})}
}

func (l *limitListener) Accept() (net.Conn, error) {
	select {
	case l.slots <- struct{}{}:
	case <-l.closed:
		return nil, net.ErrClosed
	}
	c, err := l.Listener.Accept()
	if err != nil {
		<-l.slots
		return nil, err
	}
	return &limitConn{Conn: c, release: func() { <-l.slots }}, nil
}

func (l *limitListener) Close() error {
	l.closeOnce.Do(func() { close(l.closed) })
	return l.Listener.Close()
}

type limitConn struct {
	net.Conn
	once    sync.Once
	release func()
}

func (c *limitConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(c.release)
	return err
}
