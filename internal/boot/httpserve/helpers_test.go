package httpserve

import (
	"bufio"
	"context"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// safety bounds a test's waits so a broken server fails the test rather
// than hanging it; no test expects to come near it.
const safety = 20 * time.Second

// serve runs Serve with l and h on a fresh 127.0.0.1 port until the test
// ends, and returns the address.
func serve(t *testing.T, l Limits, h http.Handler) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- Serve(ctx, ln, h, l, "test", slog.New(slog.DiscardHandler)) }()
	t.Cleanup(func() {
		cancel()
		require.NoError(t, <-done)
	})
	return ln.Addr().String()
}

// okHandler answers 200 "ok".
var okHandler = http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
	_, _ = io.WriteString(w, "ok")
})

// client is one raw HTTP/1.1 connection.
type client struct {
	net.Conn
	br *bufio.Reader
}

// dial connects to addr from the local IP from ("" for the default),
// closed when the test ends.
func dial(t *testing.T, addr, from string) *client {
	t.Helper()
	d := net.Dialer{}
	if from != "" {
		d.LocalAddr = &net.TCPAddr{IP: net.ParseIP(from)}
	}
	c, err := d.DialContext(t.Context(), "tcp", addr)
	require.NoError(t, err)
	require.NoError(t, c.SetDeadline(time.Now().Add(safety)))
	t.Cleanup(func() { _ = c.Close() })
	return &client{Conn: c, br: bufio.NewReader(c)}
}

// send writes raw, a request's text.
func (c *client) send(t *testing.T, raw string) {
	t.Helper()
	_, err := io.WriteString(c, raw)
	require.NoError(t, err)
}

// read reads one response and its whole body.
func (c *client) read(t *testing.T) (*http.Response, string) {
	t.Helper()
	resp, err := http.ReadResponse(c.br, nil)
	require.NoError(t, err)
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	require.NoError(t, resp.Body.Close())
	return resp, string(body)
}

// get sends a GET / and reads its answer.
func (c *client) get(t *testing.T) (*http.Response, string) {
	t.Helper()
	c.send(t, "GET / HTTP/1.1\r\nHost: test\r\n\r\n")
	return c.read(t)
}

// requireClosed reads c to its end and requires the server to have
// closed it (EOF or a reset), not the safety deadline to have passed.
func (c *client) requireClosed(t *testing.T) {
	t.Helper()
	_, err := io.Copy(io.Discard, c.br)
	require.NotErrorIs(t, err, os.ErrDeadlineExceeded, "the server did not close the connection: %v", err)
}
