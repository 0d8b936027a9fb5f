package httpserve

import (
	"encoding/json"
	"log/slog"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/weftrun/weft/pkg/api"
)

// requireServed sends a GET on c and requires a 200.
func requireServed(t *testing.T, c *client) {
	t.Helper()
	resp, body := c.get(t) //nolint:bodyclose // c.get has read the whole body
	require.Equal(t, http.StatusOK, resp.StatusCode, body)
}

// requireRefused sends a GET on c and requires the over-the-cap answer:
// 503 Unavailable in Weft's error shape with Retry-After: 1, then the
// connection closed.
func requireRefused(t *testing.T, c *client, message string) {
	t.Helper()
	resp, body := c.get(t) //nolint:bodyclose // c.get has read the whole body
	require.Equal(t, http.StatusServiceUnavailable, resp.StatusCode, body)
	require.Equal(t, "1", resp.Header.Get("Retry-After"))
	require.Equal(t, "application/json", resp.Header.Get("Content-Type"))
	require.True(t, resp.Close, "Connection: close")
	var e api.ErrorBody
	require.NoError(t, json.Unmarshal([]byte(body), &e))
	require.Equal(t, api.CodeUnavailable, e.Error.Code)
	require.Equal(t, message, e.Error.Message)
	require.Equal(t, map[string]any{"retryAfter": float64(1)}, e.Error.Details)
	c.requireClosed(t)
}

// servedEventually dials from from until a connection is served (a place
// frees asynchronously, when the server has seen a close) and returns it.
func servedEventually(t *testing.T, addr, from string) *client {
	t.Helper()
	for deadline := time.Now().Add(safety); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		c := dial(t, addr, from)
		if resp, _ := c.get(t); resp.StatusCode == http.StatusOK { //nolint:bodyclose // c.get has read the whole body
			return c
		}
		_ = c.Close()
	}
	require.FailNow(t, "no place freed")
	return nil
}

func TestMaxConnsRefusesOneOver(t *testing.T) {
	t.Parallel()
	addr := serve(t, Limits{MaxConns: 3, MaxConnsPerAddr: -1}, okHandler)
	over := "the test holds its limit of 3 open connections; retry"

	held := []*client{dial(t, addr, "127.0.0.1"), dial(t, addr, "127.0.0.1"), dial(t, addr, "127.0.0.2")}
	for _, c := range held {
		requireServed(t, c)
	}
	// The cap is the listener's total, whatever the address.
	requireRefused(t, dial(t, addr, "127.0.0.1"), over)
	requireRefused(t, dial(t, addr, "127.0.0.3"), over)
	for _, c := range held {
		requireServed(t, c) // keep-alive connections held are still served
	}

	require.NoError(t, held[0].Close())
	servedEventually(t, addr, "127.0.0.3")
	requireRefused(t, dial(t, addr, "127.0.0.1"), over) // one place freed, one taken
}

func TestMaxConnsPerAddrRefusesOneOver(t *testing.T) {
	t.Parallel()
	addr := serve(t, Limits{MaxConns: -1, MaxConnsPerAddr: 2}, okHandler)
	over := func(ip string) string {
		return "the test holds its limit of 2 open connections from " + ip + "; retry"
	}

	one := []*client{dial(t, addr, "127.0.0.1"), dial(t, addr, "127.0.0.1")}
	for _, c := range one {
		requireServed(t, c)
	}
	requireRefused(t, dial(t, addr, "127.0.0.1"), over("127.0.0.1"))

	// Another address has places of its own.
	two := []*client{dial(t, addr, "127.0.0.2"), dial(t, addr, "127.0.0.2")}
	for _, c := range two {
		requireServed(t, c)
	}
	requireRefused(t, dial(t, addr, "127.0.0.2"), over("127.0.0.2"))

	require.NoError(t, one[0].Close())
	servedEventually(t, addr, "127.0.0.1")
	requireRefused(t, dial(t, addr, "127.0.0.1"), over("127.0.0.1"))
	requireRefused(t, dial(t, addr, "127.0.0.2"), over("127.0.0.2"))
}

func TestConnCapsDefaultAndOff(t *testing.T) {
	t.Parallel()
	l := Limits{}.WithDefaults()
	require.Equal(t, DefaultMaxConns, l.MaxConns)
	require.Equal(t, DefaultMaxConnsPerAddr, l.MaxConnsPerAddr)
	require.Equal(t, DefaultBodyReadTimeout, l.BodyReadTimeout)
	off := Limits{MaxConns: -1, MaxConnsPerAddr: -1, BodyReadTimeout: -1}.WithDefaults()
	require.Equal(t, -1, off.MaxConns)
	require.Equal(t, -1, off.MaxConnsPerAddr)
	require.Equal(t, time.Duration(-1), off.BodyReadTimeout)
}

func TestConnCloseCountsOutOnce(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	l := limitListener(t.Context(), ln, Limits{MaxConns: 2, MaxConnsPerAddr: 2}, "test", slog.New(slog.DiscardHandler))
	defer func() { _ = l.Close() }()

	dial(t, ln.Addr().String(), "")
	dial(t, ln.Addr().String(), "")
	a, err := l.Accept()
	require.NoError(t, err)
	b, err := l.Accept()
	require.NoError(t, err)
	require.Equal(t, 2, l.counted("127.0.0.1"))

	require.NoError(t, a.Close())
	require.Error(t, a.Close()) // closing again is an error, and counts nothing
	require.Equal(t, 1, l.counted("127.0.0.1"))
	require.NoError(t, b.Close())
	require.Equal(t, 0, l.counted("127.0.0.1"))
	require.Empty(t, l.perAddr)
}

// counted is the number of connections open, which must equal those
// from addr.
func (l *connLimiter) counted(addr string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.open != l.perAddr[addr] {
		return -1
	}
	return l.open
}

func TestAddrKey(t *testing.T) {
	t.Parallel()
	require.Equal(t, "10.1.2.3", addrKey(&net.TCPAddr{IP: net.ParseIP("10.1.2.3"), Port: 5}))
	require.Equal(t, "10.1.2.3", addrKey(&net.TCPAddr{IP: net.ParseIP("::ffff:10.1.2.3"), Port: 6}))
	require.Equal(t, "2001:db8::1", addrKey(&net.TCPAddr{IP: net.ParseIP("2001:db8::1"), Port: 7}))
	require.Equal(t, "/tmp/s.sock", addrKey(&net.UnixAddr{Name: "/tmp/s.sock", Net: "unix"}))
}
