// Package httpserve runs Weft's HTTP servers the one way they all run:
// every timeout and the header limit set, so a slow client cannot hold a
// connection, and a bounded drain of the requests in flight on shutdown.
// It also writes JSON answers.
package httpserve

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net"
	"net/http"
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
)

// Limits are an HTTP server's timeouts and header limit (net/http.Server
// has their exact meaning) and how long shutdown waits for requests in
// flight. A zero field means its default.
type Limits struct {
	ReadHeaderTimeout, ReadTimeout, WriteTimeout, IdleTimeout time.Duration
	MaxHeaderBytes                                            int
	ShutdownTimeout                                           time.Duration
}

// WithDefaults returns l with every zero field set to its default.
func (l Limits) WithDefaults() Limits {
	l.ReadHeaderTimeout = cmp.Or(l.ReadHeaderTimeout, DefaultReadHeaderTimeout)
	l.ReadTimeout = cmp.Or(l.ReadTimeout, DefaultReadTimeout)
	l.WriteTimeout = cmp.Or(l.WriteTimeout, DefaultWriteTimeout)
	l.IdleTimeout = cmp.Or(l.IdleTimeout, DefaultIdleTimeout)
	l.MaxHeaderBytes = cmp.Or(l.MaxHeaderBytes, DefaultMaxHeaderBytes)
	l.ShutdownTimeout = cmp.Or(l.ShutdownTimeout, DefaultShutdownTimeout)
	return l
}

// Serve serves h on ln until ctx ends, then stops taking requests and
// drains those in flight for at most l.ShutdownTimeout. Request contexts
// are not cancelled by ctx: a request in flight finishes or meets the
// drain's end. name prefixes errors and log lines. It returns nil after a
// clean shutdown.
func Serve(ctx context.Context, ln net.Listener, h http.Handler, l Limits, name string, logger *slog.Logger) error {
	l = l.WithDefaults()
	srv := &http.Server{
		Handler:           h,
		ReadHeaderTimeout: l.ReadHeaderTimeout,
		ReadTimeout:       l.ReadTimeout,
		WriteTimeout:      l.WriteTimeout,
		IdleTimeout:       l.IdleTimeout,
		MaxHeaderBytes:    l.MaxHeaderBytes,
		ErrorLog:          slog.NewLogLogger(logger.Handler(), slog.LevelWarn),
		BaseContext:       func(net.Listener) context.Context { return context.WithoutCancel(ctx) },
	}
	serveErr := make(chan error, 1)
	go func() { serveErr <- srv.Serve(ln) }()
	logger.InfoContext(ctx, name+" listening", "addr", ln.Addr().String())
	select {
	case err := <-serveErr:
		return fmt.Errorf("%s: serve: %w", name, err)
	case <-ctx.Done():
	}
	shutdownCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), l.ShutdownTimeout)
	defer cancel()
	if err := srv.Shutdown(shutdownCtx); err != nil {
		return fmt.Errorf("%s: shutdown: %w", name, err)
	}
	return nil
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
