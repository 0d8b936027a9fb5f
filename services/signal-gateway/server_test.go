package gateway_test

import (
	"bufio"
	"context"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/weftrun/weft/internal/boot/httpserve"
	gateway "github.com/weftrun/weft/services/signal-gateway"
)

// TestSlowClientIsCut: a client that never finishes its headers, or its
// body, loses the connection to the server's timeouts instead of holding
// it.
func TestSlowClientIsCut(t *testing.T) {
	t.Parallel()
	s := setup(t, gateway.Config{HTTP: httpserve.Limits{ReadHeaderTimeout: 200 * time.Millisecond, ReadTimeout: 300 * time.Millisecond}})
	for name, partial := range map[string]string{
		"headers": "POST /v1/runs HTTP/1.1\r\nHost: weft\r\nAuthorization: Bearer ",
		"body":    "POST /v1/runs HTTP/1.1\r\nHost: weft\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{\"tenantId\":",
	} {
		conn, err := (&net.Dialer{}).DialContext(context.Background(), "tcp", strings.TrimPrefix(s.base, "http://"))
		require.NoError(t, err, name)
		_, err = conn.Write([]byte(partial))
		require.NoError(t, err, name)
		// The guard deadline only keeps a broken server from hanging the
		// test; the server closes the connection long before it.
		require.NoError(t, conn.SetReadDeadline(time.Now().Add(time.Minute)))
		_, err = io.ReadAll(conn)
		require.NoError(t, err, "%s: the server closed the connection", name)
		require.NoError(t, conn.Close())
	}
}

func TestOversizeHeadersRefused(t *testing.T) {
	t.Parallel()
	s := setup(t, gateway.Config{HTTP: httpserve.Limits{MaxHeaderBytes: 4 << 10}})
	conn, err := (&net.Dialer{}).DialContext(context.Background(), "tcp", strings.TrimPrefix(s.base, "http://"))
	require.NoError(t, err)
	defer func() { _ = conn.Close() }()
	_, err = conn.Write([]byte("POST /v1/runs HTTP/1.1\r\nHost: weft\r\nX-Big: " + strings.Repeat("a", 64<<10) + "\r\n\r\n"))
	require.NoError(t, err)
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	require.NoError(t, err)
	defer func() { _ = resp.Body.Close() }()
	require.Equal(t, http.StatusRequestHeaderFieldsTooLarge, resp.StatusCode)
}
