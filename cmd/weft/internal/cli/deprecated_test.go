package cli

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/weftrun/weft/pkg/api"
	"github.com/weftrun/weft/pkg/weftest"
)

// rerunBody runs `weft run rerun RUN --from s args…` against a gateway
// that answers 201, and returns the rerun request it received and what
// the command wrote to stderr.
func rerunBody(t *testing.T, args ...string) (api.RerunRequest, string) {
	t.Helper()
	var (
		mu  sync.Mutex
		got api.RerunRequest
	)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		if err := json.NewDecoder(r.Body).Decode(&got); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusCreated)
		_, _ = w.Write([]byte(`{"runId":"new","runRequestId":"` + got.RunRequestID + `","status":"APPROVED"}`))
	}))
	t.Cleanup(srv.Close)
	env := testEnv(map[string]string{"WEFT_TOKEN": "key"})
	err := RunCommands()["rerun"].Run(t.Context(), env, append([]string{"RUN", "--from", "s", "--api-url", srv.URL}, args...))
	require.NoError(t, err)
	mu.Lock()
	defer mu.Unlock()
	return got, env.Stderr.(*weftest.Buffer).String()
}

// `run rerun` sends --run-request-id as the request's runRequestId, as
// `run start` does; --request-id, its deprecated name, still does, with a
// one-line notice on stderr, and -h lists only the new name.
func TestRerunRunRequestIDFlag(t *testing.T) {
	t.Parallel()
	req, stderr := rerunBody(t, "--run-request-id", "r-1")
	require.Equal(t, "r-1", req.RunRequestID)
	require.Equal(t, "s", req.FromStepID)
	require.Empty(t, stderr)

	req, stderr = rerunBody(t, "--request-id", "r-2")
	require.Equal(t, "r-2", req.RunRequestID)
	require.Equal(t, "weft: --request-id is deprecated: use --run-request-id\n", stderr)

	req, _ = rerunBody(t)
	require.NotEmpty(t, req.RunRequestID, "without either flag the client makes a fresh id")

	env := testEnv(nil)
	err := RunCommands()["rerun"].Run(t.Context(), env, []string{"--from", "s", "-h"})
	require.ErrorIs(t, err, ErrUsage)
	usage := env.Stderr.(*weftest.Buffer).String()
	require.Contains(t, usage, "Usage: "+rerunSynopsis+"\n")
	require.Contains(t, usage, "\n  --run-request-id string\n")
	require.Contains(t, usage, "\n  --from string\n")
	require.NotContains(t, usage, `(default "s")`, "a flag set before -h keeps its default in help")
	require.Contains(t, usage, "Exit codes:")
	require.NotContains(t, usage, "--request-id ")
	require.NotContains(t, usage, "deprecated")
}
