package client_test

import (
	"context"
	"net/http"
	"net/url"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/weftrun/weft/pkg/client"
)

// The step routes' requests: the step id path-escaped, the filter as
// afterIndex and limit, TopSteps as steps=top, AllSteps as steps=all (on
// GetRun and WaitRun's long poll); ids that cannot name a
// resource and a negative FromIndex are refused without a request.
func TestStepRequests(t *testing.T) {
	t.Parallel()
	b := setupRead(t, jsonAnswer(t, http.StatusOK, map[string]any{"stepId": "each[3]", "attempts": []any{}, "lastEventSeq": 1}))
	ctx := context.Background()
	_, err := b.client.Step(ctx, testRunID, "each[3]")
	require.NoError(t, err)
	_, err = b.client.StepChildren(ctx, testRunID, "each", client.ChildFilter{})
	require.NoError(t, err)
	_, err = b.client.StepChildren(ctx, testRunID, "each", client.ChildFilter{FromIndex: 5, Limit: 7})
	require.NoError(t, err)
	_, err = b.client.GetRun(ctx, testRunID, client.TopSteps())
	require.NoError(t, err)
	_, err = b.client.GetRun(ctx, testRunID, client.AllSteps())
	require.NoError(t, err)
	_, err = b.client.WaitRun(ctx, testRunID, 0, client.AllSteps())
	require.NoError(t, err)

	reqs := b.api.requests()
	require.Len(t, reqs, 6)
	require.Equal(t, "/v1/runs/"+testRunID+"/steps/each%5B3%5D", reqs[0].escapedPath)
	require.Empty(t, reqs[0].query)
	require.Equal(t, "/v1/runs/"+testRunID+"/steps/each/children", reqs[1].escapedPath)
	require.Equal(t, url.Values{"afterIndex": {"-1"}}, reqs[1].query)
	require.Equal(t, url.Values{"afterIndex": {"4"}, "limit": {"7"}}, reqs[2].query)
	require.Equal(t, url.Values{"steps": {"top"}}, reqs[3].query)
	require.Equal(t, url.Values{"steps": {"all"}}, reqs[4].query)
	require.Equal(t, "all", reqs[5].query.Get("steps"))
	require.Equal(t, "1", reqs[5].query.Get("waitForSeq"))

	for _, id := range []string{"", ".", ".."} {
		_, err = b.client.Step(ctx, testRunID, id)
		require.ErrorIs(t, err, client.ErrInvalidRequest)
		_, err = b.client.Step(ctx, id, "a")
		require.ErrorIs(t, err, client.ErrInvalidRequest)
		_, err = b.client.StepChildren(ctx, testRunID, id, client.ChildFilter{})
		require.ErrorIs(t, err, client.ErrInvalidRequest)
	}
	_, err = b.client.StepChildren(ctx, testRunID, "each", client.ChildFilter{FromIndex: -1})
	require.ErrorIs(t, err, client.ErrInvalidRequest)
	require.Len(t, b.api.requests(), 6, "refused calls send nothing")

	noRead, err := client.New("http://127.0.0.1:1", client.WithToken(testToken))
	require.NoError(t, err)
	_, err = noRead.Step(ctx, testRunID, "a")
	require.ErrorIs(t, err, client.ErrNoReadURL)
	_, err = noRead.StepChildren(ctx, testRunID, "a", client.ChildFilter{})
	require.ErrorIs(t, err, client.ErrNoReadURL)
}
