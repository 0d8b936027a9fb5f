package httpserve

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/weftrun/weft/pkg/api"
)

// refuseTimeout bounds the time a refused connection is kept to write its
// 503 and drain what the client sent before closing (closing with unread
// bytes would reset the connection and lose the answer).
const refuseTimeout = time.Second

// refuseDrainBytes bounds what is read from a refused connection before
// it is closed.
const refuseDrainBytes = 64 << 10

// connLimiter is a net.Listener that counts its open connections, in
// total and per remote address, and refuses those over the caps.
// Accept never blocks on a refused connection: its answer is written in a
// goroutine of its own, bounded by refuseTimeout. Safe for concurrent use.
type connLimiter struct {
	net.Listener
	maxConns, maxPerAddr int // ≤ 0: no cap
	name                 string
	logger               *slog.Logger
	ctx                  context.Context // for log lines
	refusing             sync.WaitGroup  // refuse goroutines

	mu      sync.Mutex
	open    int
	perAddr map[string]int
	refused bool // the last connection was refused; logged once per spell
}

// limitListener wraps ln with l's connection caps. Every accepted
// connection is wrapped, capped or not, so that bodyDeadline can read the
// read deadline net/http set on it.
func limitListener(ctx context.Context, ln net.Listener, l Limits, name string, logger *slog.Logger) *connLimiter {
	return &connLimiter{
		Listener: ln, maxConns: l.MaxConns, maxPerAddr: l.MaxConnsPerAddr,
		name: name, logger: logger, ctx: ctx, perAddr: make(map[string]int),
	}
}

// Accept returns the next connection within the caps, answering and
// closing the ones over them on the way.
func (l *connLimiter) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		addr := addrKey(c.RemoteAddr())
		if msg := l.admit(addr); msg != "" {
			l.refusing.Go(func() { refuse(c, msg) })
			continue
		}
		return &limitedConn{Conn: c, l: l, addr: addr}, nil
	}
}

// admit counts a connection from addr in, or answers why it is refused.
func (l *connLimiter) admit(addr string) string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var msg string
	switch {
	case l.maxConns > 0 && l.open >= l.maxConns:
		msg = fmt.Sprintf("the %s holds its limit of %d open connections; retry", l.name, l.maxConns)
	case l.maxPerAddr > 0 && l.perAddr[addr] >= l.maxPerAddr:
		msg = fmt.Sprintf("the %s holds its limit of %d open connections from %s; retry", l.name, l.maxPerAddr, addr)
	}
	if msg != "" {
		if !l.refused {
			l.refused = true
			l.logger.WarnContext(l.ctx, l.name+" refusing connections", "reason", msg)
		}
		return msg
	}
	l.refused = false
	l.open++
	l.perAddr[addr]++
	return ""
}

// waitRefusals waits for the connections being refused to be closed,
// at most refuseTimeout.
func (l *connLimiter) waitRefusals() { l.refusing.Wait() }

// release counts a connection from addr out.
func (l *connLimiter) release(addr string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.open--
	if l.perAddr[addr]--; l.perAddr[addr] <= 0 {
		delete(l.perAddr, addr)
	}
}

// addrKey is the address a connection is counted under: the IP of a TCP
// address, the whole text of any other.
func addrKey(a net.Addr) string {
	if t, ok := a.(*net.TCPAddr); ok {
		return t.IP.String()
	}
	return a.String()
}

// refuse answers c with a 503 in Weft's error shape and closes it, within
// refuseTimeout.
func refuse(c net.Conn, msg string) {
	defer func() { _ = c.Close() }()
	_ = c.SetDeadline(time.Now().Add(refuseTimeout))
	if _, err := c.Write(refusal(msg)); err != nil {
		return
	}
	if cw, ok := c.(interface{ CloseWrite() error }); ok {
		_ = cw.CloseWrite()
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(c, refuseDrainBytes))
}

// refusal is the raw HTTP/1.1 answer to a connection over a cap.
func refusal(msg string) []byte {
	body, _ := json.Marshal(api.ErrorBody{Error: api.Error{
		Code: api.CodeUnavailable, Message: msg, Details: map[string]any{"retryAfter": 1},
	}})
	body = append(body, '\n')
	head := fmt.Sprintf("HTTP/1.1 503 Service Unavailable\r\n"+
		"Content-Type: application/json\r\nX-Content-Type-Options: nosniff\r\n"+
		"Retry-After: 1\r\nConnection: close\r\nContent-Length: %d\r\n\r\n", len(body))
	return append([]byte(head), body...)
}

// limitedConn is a connection counted by its connLimiter until it is
// closed. It remembers the read deadline last set on it.
type limitedConn struct {
	net.Conn
	l            *connLimiter
	addr         string
	once         sync.Once
	readDeadline atomic.Int64 // UnixNano; 0: none
}

// Close closes the connection and counts it out, once however often it
// is called.
func (c *limitedConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(func() { c.l.release(c.addr) })
	return err
}

// SetReadDeadline sets the connection's read deadline and remembers it.
func (c *limitedConn) SetReadDeadline(t time.Time) error {
	c.remember(t)
	return c.Conn.SetReadDeadline(t)
}

// SetDeadline sets the connection's deadlines and remembers the read one.
func (c *limitedConn) SetDeadline(t time.Time) error {
	c.remember(t)
	return c.Conn.SetDeadline(t)
}

func (c *limitedConn) remember(t time.Time) {
	var ns int64
	if !t.IsZero() {
		ns = t.UnixNano()
	}
	c.readDeadline.Store(ns)
}

// ReadDeadline is the read deadline last set; zero for none.
func (c *limitedConn) ReadDeadline() time.Time {
	if ns := c.readDeadline.Load(); ns != 0 {
		return time.Unix(0, ns)
	}
	return time.Time{}
}
