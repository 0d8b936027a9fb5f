package gateway_test

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/weftrun/weft/internal/boot/httpserve"
	"github.com/weftrun/weft/pkg/api"
	gateway "github.com/weftrun/weft/services/signal-gateway"
)

// slowTimeout is the timeout under test in TestSlowClientIsCut; the other
// read timeouts are an hour, so only the one under test can cut a client.
const slowTimeout = 200 * time.Millisecond

// slowCase is a client that starts a request with head and then sends
// trickle, one byte at a time, without ever finishing the request.
type slowCase struct {
	name    string
	limits  httpserve.Limits
	head    string
	trickle byte
	// answered: the server answers the request (its handler ran and
	// refused the body) before it closes; else it closes without a byte.
	answered bool
}

// TestSlowClientIsCut: a client that trickles its headers, or its body,
// loses the connection to the server's timeout under test, however long
// it keeps sending, and nothing of its request is persisted; a normal
// client of the same server is served meanwhile.
func TestSlowClientIsCut(t *testing.T) {
	t.Parallel()
	bodyHead := "POST /v1/runs HTTP/1.1\r\nHost: weft\r\nAuthorization: Bearer " + operatorToken +
		"\r\nContent-Type: application/json\r\nContent-Length: 1000000\r\n\r\n{\"tenantId\":"
	for _, tc := range []slowCase{
		{name: "headers past ReadHeaderTimeout", limits: httpserve.Limits{ReadHeaderTimeout: slowTimeout, ReadTimeout: time.Hour},
			head: "POST /v1/runs HTTP/1.1\r\nHost: weft\r\nAuthorization: Bearer ", trickle: 'a'},
		{name: "body past BodyReadTimeout", limits: httpserve.Limits{ReadHeaderTimeout: time.Hour, ReadTimeout: time.Hour, BodyReadTimeout: slowTimeout},
			head: bodyHead, trickle: ' ', answered: true},
		{name: "body past ReadTimeout", limits: httpserve.Limits{ReadHeaderTimeout: time.Hour, ReadTimeout: slowTimeout, BodyReadTimeout: time.Hour},
			head: bodyHead, trickle: ' ', answered: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s := setup(t, gateway.Config{HTTP: tc.limits})
			before := s.counts(t)
			conn, stopTrickle := s.slowClient(t, tc)
			defer stopTrickle()

			// The slow client holds its connection while a normal one
			// is served.
			s.run(t)
			served := s.counts(t)
			require.Equal(t, before.requests+1, served.requests, "the normal client's run is accepted")

			if tc.answered {
				requireBodyTimeoutAnswer(t, conn, stopTrickle)
			}
			requireClosed(t, conn, !tc.answered)
			require.Equal(t, served, s.counts(t), "nothing of the slow request is persisted")
		})
	}
}

// slowClient dials the gateway, writes tc.head and then trickles
// tc.trickle, one byte every quarter slowTimeout, until a write fails or
// stop is called. The connection's reads fail after a guard deadline that
// only keeps a broken server from hanging the test.
func (s *stack) slowClient(t *testing.T, tc slowCase) (conn net.Conn, stop func()) {
	t.Helper()
	conn, err := (&net.Dialer{}).DialContext(t.Context(), "tcp", strings.TrimPrefix(s.base, "http://"))
	require.NoError(t, err)
	t.Cleanup(func() { _ = conn.Close() })
	require.NoError(t, conn.SetReadDeadline(time.Now().Add(waitForCut)))
	_, err = io.WriteString(conn, tc.head)
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan struct{})
	go func() {
		defer close(done)
		tick := time.NewTicker(slowTimeout / 4)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
			if _, err := conn.Write([]byte{tc.trickle}); err != nil {
				return
			}
		}
	}()
	return conn, func() { cancel(); <-done }
}

// waitForCut is the guard deadline of a slow client's reads: far past any
// timeout under test.
const waitForCut = 30 * time.Second

// requireBodyTimeoutAnswer reads the answer to a body cut by its read
// deadline: 400 InvalidArgument naming the timed-out read, on a
// connection the server closes after it. It stops the trickle once the
// answer is in.
func requireBodyTimeoutAnswer(t *testing.T, conn net.Conn, stopTrickle func()) {
	t.Helper()
	br := bufio.NewReader(conn)
	resp, err := http.ReadResponse(br, nil)
	require.NoError(t, err, "the server answers before it closes")
	stopTrickle()
	defer func() { _ = resp.Body.Close() }()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	a := answer{status: resp.StatusCode, header: resp.Header, body: body}
	require.Equal(t, http.StatusBadRequest, a.status, "%s", a.body)
	e := a.errorBody(t)
	require.Equal(t, api.CodeInvalidArgument, e.Code)
	require.Contains(t, e.Message, "reading the body failed")
	require.Contains(t, e.Message, "i/o timeout", "the read deadline cut the body")
	require.True(t, resp.Close, "the answer says the connection closes")
	require.Zero(t, br.Buffered(), "nothing follows the answer")
}

// requireClosed requires the server to have closed conn: a read ends in
// EOF, or in a reset when the server closed with the trickle unread, and
// not at the guard deadline. silent requires that no byte came first.
func requireClosed(t *testing.T, conn net.Conn, silent bool) {
	t.Helper()
	got, err := io.ReadAll(conn)
	if !errors.Is(err, syscall.ECONNRESET) {
		require.NoError(t, err, "the server closed the connection before the guard deadline")
	}
	if silent {
		require.Empty(t, got, "the server closed without answering")
	}
}
