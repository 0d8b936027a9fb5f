package httpserve

import (
	"context"
	"net"
	"net/http"
	"time"
)

// connKey is the request context key of the request's *limitedConn.
type connKey struct{}

// withConn is the server's ConnContext: it puts the connection in the
// context of its requests, for bodyDeadline.
func withConn(ctx context.Context, c net.Conn) context.Context {
	return context.WithValue(ctx, connKey{}, c)
}

// bodyDeadline runs h with the read deadline of a request that has a body
// moved to at most timeout from now (Limits.BodyReadTimeout has the
// contract). A timeout ≤ 0 leaves h as it is.
func bodyDeadline(h http.Handler, timeout time.Duration) http.Handler {
	if timeout <= 0 {
		return h
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.ContentLength != 0 {
			deadline := time.Now().Add(timeout)
			if c, ok := r.Context().Value(connKey{}).(*limitedConn); ok {
				if whole := c.ReadDeadline(); !whole.IsZero() && whole.Before(deadline) {
					deadline = whole
				}
			}
			// An error means the writer cannot set deadlines (not
			// net/http's own): the request keeps ReadTimeout's.
			_ = http.NewResponseController(w).SetReadDeadline(deadline)
		}
		h.ServeHTTP(w, r)
	})
}
