// Package httpserve runs Weft's HTTP servers the one way they all run:
// every timeout and the header limit set, a deadline on reading a request
// body and a cap on open connections, in total and per client address, so
// slow or many clients cannot hold the server's connections, and a bounded
// drain of the requests in flight on shutdown. It also writes JSON
// answers.
package httpserve

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"time"
)

// Defaults applied to a zero Limits field.
const (
	DefaultReadHeaderTimeout = 5 * time.Second
	DefaultReadTimeout       = 30 * time.Second
	DefaultWriteTimeout      = 30 * time.Second
	DefaultIdleTimeout       = 2 * time.Minute
	DefaultMaxHeaderBytes    = 16 << 10
	DefaultShutdownTimeout   = 10 * time.Second

	// DefaultBodyReadTimeout leaves a client 10 s to send a request body:
	// the gateway's largest body (2 MiB) at 1.6 Mbit/s, while a sender
	// trickling it loses its connection in a third of ReadTimeout.
	DefaultBodyReadTimeout = 10 * time.Second
	// DefaultMaxConns caps a listener at 1024 open connections, each a
	// file descriptor and a goroutine: well under the open-file limit Go
	// raises a process to at start on common hosts, and room for the
	// keep-alive connections and long polls of many clients.
	DefaultMaxConns = 1024
	// DefaultMaxConnsPerAddr caps one client address at 128 open
	// connections, an eighth of DefaultMaxConns: room for a fleet of
	// workers or browsers behind one NAT address, while a single host
	// cannot take the whole listener.
	DefaultMaxConnsPerAddr = 128
)

// Limits are an HTTP server's timeouts and header limit (net/http.Server
// has the exact meaning of the first five), how long shutdown waits for
// requests in flight, the deadline on reading a request body and the caps
// on open connections. A zero field means its default; a negative
// BodyReadTimeout, MaxConns or MaxConnsPerAddr turns that limit off.
type Limits struct {
	ReadHeaderTimeout, ReadTimeout, WriteTimeout, IdleTimeout time.Duration
	MaxHeaderBytes                                            int
	ShutdownTimeout                                           time.Duration

	// BodyReadTimeout is how long a handler has, from its start, to read
	// the request's body to its end. A request with a body (a
	// Content-Length above 0, or chunked) gets this read deadline on its
	// connection before the handler runs; the deadline is never set later
	// than the one ReadTimeout set. Once the body is read to its end,
	// net/http clears the read deadline itself, so the handler may go on
	// as long as WriteTimeout allows. A request without a body (a long
	// poll) is not touched. Past the deadline the body's Read returns an
	// error wrapping os.ErrDeadlineExceeded, the request's context is
	// cancelled and the connection is closed after the handler answers.
	BodyReadTimeout time.Duration
	// MaxConns caps the connections open on the listener at once, idle
	// keep-alive ones included. A connection over it is answered at once
	// with 503 Unavailable, Retry-After: 1 and Connection: close, without
	// reading its request, and closed; a place frees when any open
	// connection closes.
	MaxConns int
	// MaxConnsPerAddr caps the connections open at once from one remote
	// IP address (its whole text for a non-TCP address), answered over it
	// as over MaxConns. Behind a proxy or load balancer every connection
	// comes from its address: set it negative or to MaxConns there.
	MaxConnsPerAddr int
}

// WithDefaults returns l with every zero field set to its default.
func (l Limits) WithDefaults() Limits {
	l.ReadHeaderTimeout = cmp.Or(l.ReadHeaderTimeout, DefaultReadHeaderTimeout)
	l.ReadTimeout = cmp.Or(l.ReadTimeout, DefaultReadTimeout)
	l.WriteTimeout = cmp.Or(l.WriteTimeout, DefaultWriteTimeout)
	l.IdleTimeout = cmp.Or(l.IdleTimeout, DefaultIdleTimeout)
	l.MaxHeaderBytes = cmp.Or(l.MaxHeaderBytes, DefaultMaxHeaderBytes)
	l.ShutdownTimeout = cmp.Or(l.ShutdownTimeout, DefaultShutdownTimeout)
	l.BodyReadTimeout = cmp.Or(l.BodyReadTimeout, DefaultBodyReadTimeout)
	l.MaxConns = cmp.Or(l.MaxConns, DefaultMaxConns)
	l.MaxConnsPerAddr = cmp.Or(l.MaxConnsPerAddr, DefaultMaxConnsPerAddr)
	return l
}

// Serve serves h on ln until ctx ends, then stops taking requests and
// drains those in flight for at most l.ShutdownTimeout. Connections over
// l.MaxConns or l.MaxConnsPerAddr are refused with a 503, and a request
// body is read under l.BodyReadTimeout (see Limits). Request contexts
// are not cancelled by ctx: a request in flight finishes or meets the
// drain's end. name prefixes errors and log lines. It returns nil after a
// clean shutdown.
func Serve(ctx context.Context, ln net.Listener, h http.Handler, l Limits, name string, logger *slog.Logger) error {
	l = l.WithDefaults()
	lim := limitListener(ctx, ln, l, name, logger)
	srv := newServer(ctx, h, l, logger)
	serveErr := make(chan error, 1)
	go func() { serveErr <- srv.Serve(lim) }()
	logger.InfoContext(ctx, name+" listening", "addr", ln.Addr().String())
	select {
	case err := <-serveErr:
		lim.waitRefusals()
		return fmt.Errorf("%s: serve: %w", name, err)
	case <-ctx.Done():
	}
	shutdownCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), l.ShutdownTimeout)
	defer cancel()
	err := srv.Shutdown(shutdownCtx)
	serveEnd := <-serveErr // http.ErrServerClosed, as soon as Shutdown has closed the listener
	lim.waitRefusals()
	if err == nil && !errors.Is(serveEnd, http.ErrServerClosed) {
		err = serveEnd
	}
	if err != nil {
		return fmt.Errorf("%s: shutdown: %w", name, err)
	}
	return nil
}

// ServeWith is Serve with loops running beside the server, each on a
// context that ends when Serve returns (ctx ended or the server failed):
// it returns once they all have.
func ServeWith(ctx context.Context, ln net.Listener, h http.Handler, l Limits, name string, logger *slog.Logger,
	loops ...func(context.Context)) error {
	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	defer wg.Wait()
	defer cancel() // before wg.Wait: the loops end with the server, whatever its error
	for _, loop := range loops {
		wg.Go(func() { loop(ctx) })
	}
	return Serve(ctx, ln, h, l, name, logger)
}

// newServer is the http.Server of h under l, whose request contexts
// derive from ctx without its cancellation.
func newServer(ctx context.Context, h http.Handler, l Limits, logger *slog.Logger) *http.Server {
	return &http.Server{
		Handler:           bodyDeadline(h, l.BodyReadTimeout),
		ReadHeaderTimeout: l.ReadHeaderTimeout,
		ReadTimeout:       l.ReadTimeout,
		WriteTimeout:      l.WriteTimeout,
		IdleTimeout:       l.IdleTimeout,
		MaxHeaderBytes:    l.MaxHeaderBytes,
		ErrorLog:          slog.NewLogLogger(logger.Handler(), slog.LevelWarn),
		BaseContext:       func(net.Listener) context.Context { return context.WithoutCancel(ctx) },
		ConnContext:       withConn,
	}
}

// Listen listens on addr (TCP). The error names envHint, the flag or
// variable that sets another address.
func Listen(ctx context.Context, addr, name, envHint string) (net.Listener, error) {
	ln, err := (&net.ListenConfig{}).Listen(ctx, "tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("%s: listen on %s: %w (set another address with %s)", name, addr, err, envHint)
	}
	return ln, nil
}

// WriteJSON answers status with v encoded as JSON and a trailing newline.
// If v cannot be encoded it answers 500 with the Weft error shape.
func WriteJSON(w http.ResponseWriter, status int, v any) {
	body, err := json.Marshal(v)
	if err != nil {
		status = http.StatusInternalServerError
		body = []byte(`{"error":{"code":"Internal","message":"encoding the answer failed"}}`)
	}
	WriteRaw(w, status, append(body, '\n'))
}

// WriteRaw answers status with body, which must be JSON.
func WriteRaw(w http.ResponseWriter, status int, body []byte) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(status)
	_, _ = w.Write(body)
}
