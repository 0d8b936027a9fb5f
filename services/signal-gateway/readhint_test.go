package gateway_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/weftrun/weft/pkg/api"
	gateway "github.com/weftrun/weft/services/signal-gateway"
)

// A read sent to the gateway (a user with one base URL) is a 404 that says
// the read API serves it, and where when the gateway knows (issue #37 item
// 6); a start's POST and other unknown paths answer as before.
func TestReadSentToTheGatewayNamesTheReadAPI(t *testing.T) {
	t.Parallel()
	s := setup(t, gateway.Config{DisableScheduler: true, ReadAPIURL: "http://reads.example:8081/"})
	bare := setup(t, gateway.Config{DisableScheduler: true})
	for _, path := range []string{"/v1/runs", "/v1/runs?status=FAILED", "/v1/runs/01a2363b-2d8e-7949-ab2c-17cff2dd77f2",
		"/v1/runs/x/events", "/v1/alerts", "/v1/whoami"} {
		a, err := s.do(t, http.MethodGet, path, operatorToken, nil)
		require.NoError(t, err)
		require.Equal(t, http.StatusNotFound, a.status, "%s: %s", path, a.body)
		e := a.errorBody(t)
		require.Equal(t, api.CodeNotFound, e.Code)
		require.True(t, strings.HasPrefix(e.Message, "no such endpoint"), e.Message)
		require.Contains(t, e.Message, "served by the read API")
		require.Equal(t, "http://reads.example:8081"+path, e.Details["readApi"], path)

		a, err = bare.do(t, http.MethodGet, path, operatorToken, nil)
		require.NoError(t, err)
		require.Equal(t, http.StatusNotFound, a.status, "%s: %s", path, a.body)
		require.Contains(t, a.errorBody(t).Message, "served by the read API")
		require.NotContains(t, a.errorBody(t).Details, "readApi")
	}
	a, err := s.do(t, http.MethodGet, "/v1/nothing", operatorToken, nil)
	require.NoError(t, err)
	require.Equal(t, "no such endpoint: /v1/nothing", a.errorBody(t).Message)
	a, err = s.do(t, http.MethodPut, "/v1/runs", operatorToken, nil)
	require.NoError(t, err)
	require.Equal(t, http.StatusMethodNotAllowed, a.status, "%s", a.body)
}
