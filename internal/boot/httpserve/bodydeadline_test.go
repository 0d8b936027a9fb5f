package httpserve

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// bodyTimeout is the tests' BodyReadTimeout.
const bodyTimeout = 200 * time.Millisecond

// readingHandler reads the body, sends what the read returned on got,
// then holds the request for three BodyReadTimeouts (its context must
// stay alive) and answers how many bytes it read.
func readingHandler(got chan<- error) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n, err := io.Copy(io.Discard, r.Body)
		got <- err
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		if err := holdAlive(r.Context()); err != nil {
			http.Error(w, err.Error(), http.StatusServiceUnavailable)
			return
		}
		_, _ = fmt.Fprintf(w, "read %d", n)
	})
}

// holdAlive waits three BodyReadTimeouts, or answers why ctx ended first.
func holdAlive(ctx context.Context) error {
	select {
	case <-ctx.Done():
		return fmt.Errorf("request context ended: %w", context.Cause(ctx))
	case <-time.After(3 * bodyTimeout):
		return nil
	}
}

// trickle writes one byte of a body every quarter BodyReadTimeout, faster
// than any one read's timeout would notice, until a write fails or ctx
// ends.
func trickle(ctx context.Context, c *client, chunked bool) {
	tick := time.NewTicker(bodyTimeout / 4)
	defer tick.Stop()
	b := "x"
	if chunked {
		b = "1\r\nx\r\n"
	}
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		if _, err := io.WriteString(c, b); err != nil {
			return
		}
	}
}

func TestBodyReadTimeoutCutsATrickledBody(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		limits  Limits
		chunked bool
	}{
		{"content-length", Limits{BodyReadTimeout: bodyTimeout, ReadTimeout: time.Hour}, false},
		{"chunked", Limits{BodyReadTimeout: bodyTimeout, ReadTimeout: time.Hour}, true},
		// The body deadline never outlasts ReadTimeout's.
		{"read-timeout-first", Limits{BodyReadTimeout: time.Hour, ReadTimeout: bodyTimeout}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got := make(chan error, 1)
			c := dial(t, serve(t, tc.limits, readingHandler(got)), "")
			head := "POST / HTTP/1.1\r\nHost: test\r\nContent-Length: 1000\r\n\r\n"
			if tc.chunked {
				head = "POST / HTTP/1.1\r\nHost: test\r\nTransfer-Encoding: chunked\r\n\r\n"
			}
			c.send(t, head)
			ctx, stop := context.WithCancel(t.Context())
			defer stop()
			go trickle(ctx, c, tc.chunked)

			select {
			case err := <-got:
				require.ErrorIs(t, err, os.ErrDeadlineExceeded)
			case <-time.After(safety):
				require.FailNow(t, "the trickled body was not cut")
			}
			c.requireClosed(t)
		})
	}
}

func TestBodyReadTimeoutServesAPromptBody(t *testing.T) {
	t.Parallel()
	got := make(chan error, 1)
	c := dial(t, serve(t, Limits{BodyReadTimeout: bodyTimeout}, readingHandler(got)), "")
	for range 2 { // the keep-alive connection's next request is served too
		c.send(t, "POST / HTTP/1.1\r\nHost: test\r\nContent-Length: 5\r\n\r\nhello")
		resp, body := c.read(t) //nolint:bodyclose // c.read has read the whole body
		require.NoError(t, <-got)
		// Read to its end, the body's deadline is gone: the handler
		// outlived it with its context alive.
		require.Equal(t, http.StatusOK, resp.StatusCode, body)
		require.Equal(t, "read 5", body)
	}
}

func TestBodyReadTimeoutSparesARequestWithoutBody(t *testing.T) {
	t.Parallel()
	longPoll := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if err := holdAlive(r.Context()); err != nil {
			http.Error(w, err.Error(), http.StatusServiceUnavailable)
			return
		}
		_, _ = io.WriteString(w, "waited")
	})
	c := dial(t, serve(t, Limits{BodyReadTimeout: bodyTimeout}, longPoll), "")
	resp, body := c.get(t) //nolint:bodyclose // c.get has read the whole body
	require.Equal(t, http.StatusOK, resp.StatusCode, body)
	require.Equal(t, "waited", body)
}
