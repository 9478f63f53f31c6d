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
//
// It is fair by construction (issue 31): a request waits for room only at
// admission, holding nothing, for everything it expects to need at once (a
// body's declared length, a zstd window, a gRPC message's limit); waiters are
// let in first come, first served; and a request that needs more after it
// was admitted gets it only if it can have it now and nobody is waiting for
// room — otherwise it fails and gives back everything. No request ever waits
// while it holds part of the budget, so no two can deadlock or livelock on
// halves, and a flood of requests that each grow (decompression bombs)
// yields to the requests queued behind it. A connection may hold more than
// share only with a single request, so one gRPC connection multiplexing
// many streams cannot take the whole budget.
type memBudget struct {
	mu    sync.Mutex
	limit int64
	share int64
	used  int64
	peak  int64
	conns map[string]*connHold
	queue []*budgetWaiter
}

// connHold is what one connection's requests hold.
type connHold struct {
	bytes   int64
	charges int
}

type budgetWaiter struct {
	key     string
	n       int64
	ready   chan struct{}
	granted bool
}

func newMemBudget(limit int64) *memBudget {
	return &memBudget{limit: limit, share: limit / 4, conns: map[string]*connHold{}}
}

// shareAllowsLocked says whether a connection's new (newCharge) or existing
// request may take n more without putting the connection past its share.
func (b *memBudget) shareAllowsLocked(key string, n int64, newCharge bool) bool {
	c := b.conns[key]
	if c == nil {
		return true
	}
	others := c.charges
	if !newCharge {
		others--
	}
	return others <= 0 || c.bytes+n <= b.share
}

func (b *memBudget) takeLocked(key string, n int64, newCharge bool) {
	c := b.conns[key]
	if c == nil {
		c = &connHold{}
		b.conns[key] = c
	}
	c.bytes += n
	if newCharge {
		c.charges++
	}
	b.used += n
	b.peak = max(b.peak, b.used)
}

// grantLocked lets waiters in, in arrival order: the first that lacks room
// stops the rest (so a large request is not passed forever by small ones);
// one held back only by its own connection's share does not.
func (b *memBudget) grantLocked() {
	kept := b.queue[:0]
	blocked := false
	for _, w := range b.queue {
		if blocked || !b.shareAllowsLocked(w.key, w.n, true) {
			kept = append(kept, w)
			continue
		}
		if b.used+w.n > b.limit {
			blocked = true
			kept = append(kept, w)
			continue
		}
		b.takeLocked(w.key, w.n, true)
		w.granted = true
		close(w.ready)
	}
	clear(b.queue[len(kept):])
	b.queue = kept
}

// roomWaitersLocked says whether a queued request waits for room (not for
// its connection's share): growth then yields to it.
func (b *memBudget) roomWaitersLocked() bool {
	for _, w := range b.queue {
		if b.shareAllowsLocked(w.key, w.n, true) {
			return true
		}
	}
	return false
}

// admit takes n bytes for a new request of connection key, waiting up to
// wait, in line, for room.
func (b *memBudget) admit(ctx context.Context, key string, n int64, wait time.Duration) error {
	if n > b.limit {
		return errOverBudget
	}
	b.mu.Lock()
	if !b.roomWaitersLocked() && b.used+n <= b.limit && b.shareAllowsLocked(key, n, true) {
		b.takeLocked(key, n, true)
		b.mu.Unlock()
		return nil
	}
	if wait <= 0 {
		b.mu.Unlock()
		return errOverBudget
	}
	w := &budgetWaiter{key: key, n: n, ready: make(chan struct{})}
	b.queue = append(b.queue, w)
	b.mu.Unlock()
	t := time.NewTimer(wait)
	defer t.Stop()
	var err error
	select {
	case <-w.ready:
		return nil
	case <-t.C:
		err = errOverBudget
	case <-ctx.Done():
		err = ctx.Err()
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if w.granted { // let in while the timer fired
		return nil
	}
	for i, q := range b.queue {
		if q == w {
			b.queue = append(b.queue[:i], b.queue[i+1:]...)
			break
		}
	}
	b.grantLocked() // those it held back may fit now
	return err
}

// grow gives an admitted request of connection key n more bytes, now or
// never: it never waits, so a request holding part of the budget never
// blocks others.
func (b *memBudget) grow(key string, n int64) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.used+n > b.limit || !b.shareAllowsLocked(key, n, false) || b.roomWaitersLocked() {
		return errOverBudget
	}
	b.takeLocked(key, n, false)
	return nil
}

// release returns n bytes of connection key's request; end says the request
// holds nothing more.
func (b *memBudget) release(key string, n int64, end bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if c := b.conns[key]; c != nil {
		c.bytes -= n
		if end {
			c.charges--
		}
		if c.charges <= 0 {
			delete(b.conns, key)
		}
	}
	b.used -= n
	if len(b.queue) > 0 {
		b.grantLocked()
	}
}

// usage returns the bytes held now and the most ever held at once.
func (b *memBudget) usage() (used, peak int64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.used, b.peak
}

// charge is what one request holds of the budget: taken at admission
// (admit), grown without waiting (grow) as the body turns out larger, and,
// once the payload is queued, released by the capture writer
// (OTLPPayload.releaseBody).
type charge struct {
	b    *memBudget
	key  string // the client's connection
	ctx  context.Context
	wait time.Duration

	mu       sync.Mutex
	n        int64
	base     int64 // taken at admission
	admitted bool
	released bool
}

// admit takes the request's first n bytes, waiting in line for room.
func (c *charge) admit(n int64) error {
	c.mu.Lock()
	if c.admitted || c.released {
		c.mu.Unlock()
		return c.grow(n)
	}
	c.mu.Unlock()
	if err := c.b.admit(c.ctx, c.key, n, c.wait); err != nil {
		return err
	}
	c.mu.Lock()
	c.admitted = true
	c.n += n
	c.base = c.n
	c.mu.Unlock()
	return nil
}

// preempted says whether the request holds more than it was admitted with
// while another waits for room: what it took by growing was room nobody
// wanted, and it should give it back (and be told to retry) rather than
// make the waiter wait until its body ends.
func (c *charge) preempted() bool {
	c.mu.Lock()
	over := c.admitted && !c.released && c.n > c.base
	c.mu.Unlock()
	if !over {
		return false
	}
	c.b.mu.Lock()
	defer c.b.mu.Unlock()
	return c.b.roomWaitersLocked()
}

// grow takes n more bytes, or fails at once (errOverBudget).
func (c *charge) grow(n int64) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.admitted || c.released {
		return errOverBudget
	}
	if err := c.b.grow(c.key, n); err != nil {
		return err
	}
	c.n += n
	return nil
}

// give returns n of the bytes held.
func (c *charge) give(n int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	n = min(n, c.n)
	if n <= 0 || c.released {
		return
	}
	c.n -= n
	c.b.release(c.key, n, false)
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
	defer c.mu.Unlock()
	if c.released {
		return
	}
	c.released = true
	if c.admitted {
		c.b.release(c.key, c.n, true)
	}
	c.n = 0
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
