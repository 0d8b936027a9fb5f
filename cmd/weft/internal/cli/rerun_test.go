package cli

import (
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/weftrun/weft/pkg/client"
)

// A refused rerun lists each problem the gateway named, one per line;
// a refusal without problems, and an error that is no answer, add nothing.
func TestProblemLines(t *testing.T) {
	t.Parallel()
	refused := fmt.Errorf("rerun: %w", &client.Error{Status: 400, Code: "InvalidArgument", Message: "input does not fit", Details: map[string]any{
		"problems": []any{
			map[string]any{"path": "input.total", "code": "invalid", "message": "must be >= 0"},
			map[string]any{"path": "", "code": "invalid", "message": "missing property customer"},
		},
	}})
	require.Equal(t, "\n  input.total: must be >= 0\n  (the whole body): missing property customer", problemLines(refused))
	require.Empty(t, problemLines(&client.Error{Status: 409, Code: "RerunRefused", Message: "not ended"}))
	require.Empty(t, problemLines(errors.New("no answer")))
}
