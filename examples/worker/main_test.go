package main

import (
	"bytes"
	"context"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/weftrun/weft/examples/internal/devstacktest"
	"github.com/weftrun/weft/pkg/weftest"
)

func TestMain(m *testing.M) { weftest.Main(m) }

// finalView is what `weft run start --wait -o json` prints that the test
// reads.
type finalView struct {
	RunID  string          `json:"runId"`
	Status string          `json:"status"`
	Output json.RawMessage `json:"output"`
}

// TestTour walks the tour of examples/README.md ("Your own activities")
// against a real `weft dev`: the worker finds the stack through its data
// folder, a hello run completes first, and then the plan runs on this
// worker alone: fetch-json reads the dev stack's read API with the token
// the worker resolved from WEFT_SECRET_API_TOKEN, and count-by counts the
// runs it listed by status. Not parallel: the secret is an environment
// variable of the process, as it is of a real worker.
func TestTour(t *testing.T) {
	s := devstacktest.Start(t)
	token := s.Token(t)
	t.Setenv("WEFT_SECRET_API_TOKEN", token)

	logs := &weftest.Buffer{}
	ctx, stop := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, func(k string) string { return map[string]string{"WEFT_DEV_DIR": s.Dir}[k] }, logs)
	}()
	t.Cleanup(func() {
		stop()
		require.NoError(t, <-done, "the worker stops cleanly\n%s", logs.String())
	})

	var hello finalView
	require.NoError(t, json.Unmarshal([]byte(s.Weft(t, "run", "start", "-f", "examples/hello.yaml", "--wait", "-o", "json")), &hello))
	require.Equal(t, "COMPLETED", hello.Status)

	input := `{"url": "` + s.Endpoints.ReadAPI + `/v1/runs?limit=50"}`
	var v finalView
	require.NoError(t, json.Unmarshal([]byte(s.Weft(t, "run", "start", "-f", "examples/worker/plan.yaml", "--input", input, "--wait", "-o", "json")), &v))
	require.Equal(t, "COMPLETED", v.Status, "worker log:\n%s", logs.String())
	var out struct {
		Total  int            `json:"total"`
		Counts map[string]int `json:"counts"`
	}
	require.NoError(t, json.Unmarshal(v.Output, &out), "the run's output is count-by's: %s", v.Output)
	require.Equal(t, 1, out.Counts["COMPLETED"], "the hello run, and this one not yet: %s", v.Output)
	require.LessOrEqual(t, out.Total, 2, "only hello and this run, in whatever state it was read, exist: %s", v.Output)

	var events bytes.Buffer
	require.NoError(t, json.Compact(&events, []byte(s.Weft(t, "run", "events", v.RunID, "-o", "json"))))
	require.Contains(t, events.String(), `"secretRef":"api-token"`, "the history holds the reference")
	require.NotContains(t, events.String(), token, "and never the secret's value")
	require.Contains(t, logs.String(), "worker: attempt ended", "the SDK logs each attempt")
}
