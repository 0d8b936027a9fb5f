package projector_test

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/weftrun/weft/internal/policy/auth"
	"github.com/weftrun/weft/pkg/api"
	"github.com/weftrun/weft/services/projector"
)

// A read with more than one Authorization value is refused with 400, even
// when each value alone is a valid key: no copy is picked.
func TestMultipleAuthorizationRefused(t *testing.T) {
	t.Parallel()
	s := newStack(t)
	s.serve(t, projector.Config{})
	for _, values := range [][]string{
		{"Bearer " + readerToken, "Bearer " + readerToken},
		{"Bearer " + readerToken, "Bearer " + otherToken},
	} {
		req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, s.url+"/v1/runs", nil)
		require.NoError(t, err)
		for _, v := range values {
			req.Header.Add("Authorization", v)
		}
		r := send(req)
		require.NoError(t, r.err)
		requireError(t, r, http.StatusBadRequest, api.CodeInvalidArgument, auth.ErrMultipleCredentials.Error())
	}
	one := s.fetch(t, readerToken, "/v1/runs")
	require.Equal(t, http.StatusOK, one.status, "%s", one.body)
}
