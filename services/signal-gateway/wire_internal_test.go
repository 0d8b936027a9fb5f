package gateway

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/weftrun/weft/pkg/api"
	"github.com/weftrun/weft/services/signal-gateway/internal/intake"
)

// decodeStart reads runRequestId in its one pass: absent or null asks for
// a fresh id (""), a string is the id, an empty string is refused naming
// the field, anything else is refused as the wrong type; every other
// field lands in the request.
func TestDecodeStartReadsRunRequestID(t *testing.T) {
	t.Parallel()
	const head = `{"tenantId":"acme","projectId":"p","environmentId":"dev","planId":"hello","planVersion":"1","plan":{"x":1},"input":[1]`
	for _, tc := range []struct {
		name, member, want, refusal string
	}{
		{name: "absent"},
		{name: "null", member: `,"runRequestId":null`},
		{name: "an id", member: `,"runRequestId":"r-1"`, want: "r-1"},
		{name: "empty", member: `,"runRequestId":""`, refusal: "runRequestId is empty"},
		{name: "a number", member: `,"runRequestId":7`, refusal: "runRequestId: must be a string"},
		{name: "twice", member: `,"runRequestId":"a","runRequestId":"b"`, refusal: `key "runRequestId" appears more than once`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			req, err := decodeStart([]byte(head+tc.member+`}`), 0, "request body")
			if tc.refusal != "" {
				e, ok := errors.AsType[*intake.Error](err)
				require.True(t, ok, "%v", err)
				require.Equal(t, api.CodeInvalidArgument, e.Code)
				require.ErrorContains(t, err, tc.refusal)
				return
			}
			require.NoError(t, err)
			require.Equal(t, api.StartRunRequest{TenantID: "acme", ProjectID: "p", EnvironmentID: "dev", PlanID: "hello",
				PlanVersion: "1", RunRequestID: tc.want, Plan: json.RawMessage(`{"x":1}`), Input: json.RawMessage(`[1]`)}, req)
		})
	}
}
