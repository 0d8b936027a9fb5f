package client_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/weftrun/weft/pkg/api"
	"github.com/weftrun/weft/pkg/client"
)

// unavailable is the gateway's 503.
func unavailable(t *testing.T) answer {
	t.Helper()
	return errAnswer(t, http.StatusServiceUnavailable, api.CodeUnavailable, "shutting down", nil)
}

func TestRetryReusesGeneratedRunRequestID(t *testing.T) {
	t.Parallel()
	b := setup(t, []answer{unavailable(t), unavailable(t), jsonAnswer(t, http.StatusCreated, startResult("x", false))})

	_, err := b.client.StartRun(context.Background(), startReq())
	require.NoError(t, err)
	reqs := b.gw.requests()
	require.Len(t, reqs, 3)
	id := requireUUIDv7(t, reqs[0].body["runRequestId"])
	require.Equal(t, id, reqs[1].body["runRequestId"])
	require.Equal(t, id, reqs[2].body["runRequestId"])
	require.Equal(t, []time.Duration{100 * time.Millisecond, 200 * time.Millisecond}, b.sleeps.durations())
}

func TestRetryReusesGeneratedSignalID(t *testing.T) {
	t.Parallel()
	b := setup(t, []answer{unavailable(t), unavailable(t),
		jsonAnswer(t, http.StatusAccepted, acceptedResult("run-1", "PAUSE", "s"))})

	_, err := b.client.Signal(context.Background(), "run-1", api.SignalRequest{SignalName: "PAUSE"})
	require.NoError(t, err)
	reqs := b.gw.requests()
	require.Len(t, reqs, 3)
	id := requireUUIDv7(t, reqs[0].body["signalId"])
	require.Equal(t, id, reqs[1].body["signalId"])
	require.Equal(t, id, reqs[2].body["signalId"])
}

func TestRetryKeepsCallerIDs(t *testing.T) {
	t.Parallel()
	b := setup(t, []answer{unavailable(t), jsonAnswer(t, http.StatusAccepted, acceptedResult("run-1", "PAUSE", "mine"))})

	_, err := b.client.Signal(context.Background(), "run-1", api.SignalRequest{SignalName: "PAUSE", SignalID: "mine"})
	require.NoError(t, err)
	reqs := b.gw.requests()
	require.Len(t, reqs, 2)
	require.Equal(t, "mine", reqs[0].body["signalId"])
	require.Equal(t, "mine", reqs[1].body["signalId"])
}

func TestRetryOnRetryableStatus(t *testing.T) {
	t.Parallel()
	for _, status := range []int{429, 500, 502, 503, 504} {
		t.Run(strconv.Itoa(status), func(t *testing.T) {
			t.Parallel()
			b := setup(t, []answer{{status: status, body: "{}"}, jsonAnswer(t, http.StatusCreated, startResult("x", false))})
			_, err := b.client.StartRun(context.Background(), startReq())
			require.NoError(t, err)
			require.Len(t, b.gw.requests(), 2)
		})
	}
}

func TestNoRetryOnClientError(t *testing.T) {
	t.Parallel()
	for status, code := range map[int]string{
		400: api.CodeInvalidArgument, 401: api.CodeUnauthenticated, 403: api.CodePermissionDenied,
		404: api.CodeNotFound, 405: api.CodeMethodNotAllowed, 409: api.CodeSignalAcceptanceIndeterminate,
		413: api.CodePayloadTooLarge, 415: api.CodeUnsupportedMediaType,
	} {
		t.Run(strconv.Itoa(status), func(t *testing.T) {
			t.Parallel()
			b := setup(t, []answer{errAnswer(t, status, code, "no", nil), jsonAnswer(t, http.StatusAccepted, struct{}{})})
			_, err := b.client.Signal(context.Background(), "run-1", api.SignalRequest{SignalName: "PAUSE"})
			var e *client.Error
			require.ErrorAs(t, err, &e)
			require.Equal(t, status, e.Status)
			require.Equal(t, code, e.Code)
			require.Len(t, b.gw.requests(), 1)
			require.Empty(t, b.sleeps.durations())
		})
	}
}

func TestRetryAfterHonoured(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	b := setup(t, []answer{
		{status: 429, header: map[string]string{"Retry-After": "7"}, body: "{}"},
		errAnswer(t, 429, api.CodeRateLimited, "slow down", map[string]any{"retryAfter": 3}),
		{status: 503, header: map[string]string{"Retry-After": now.Add(11 * time.Second).Format(http.TimeFormat)}},
		{status: 429, header: map[string]string{"Retry-After": "0"}, body: "{}"},
		jsonAnswer(t, http.StatusAccepted, acceptedResult("run-1", "PAUSE", "s")),
	}, client.WithNow(func() time.Time { return now }),
		client.WithRetry(client.RetryPolicy{InitialBackoff: time.Second, MaxBackoff: time.Second}))

	_, err := b.client.Signal(context.Background(), "run-1", api.SignalRequest{SignalName: "PAUSE"})
	require.NoError(t, err)
	require.Len(t, b.gw.requests(), 5)
	// The longer of Retry-After and the backoff (here always 1s).
	require.Equal(t, []time.Duration{7 * time.Second, 3 * time.Second, 11 * time.Second, time.Second},
		b.sleeps.durations())
}

func TestBackoffGrowsToCap(t *testing.T) {
	t.Parallel()
	b := setup(t, []answer{unavailable(t)},
		client.WithRetry(client.RetryPolicy{MaxAttempts: 6, InitialBackoff: 10 * time.Millisecond,
			MaxBackoff: 50 * time.Millisecond, Multiplier: 3}))

	_, err := b.client.StartRun(context.Background(), startReq())
	require.Error(t, err)
	ms := time.Millisecond
	require.Equal(t, []time.Duration{10 * ms, 30 * ms, 50 * ms, 50 * ms, 50 * ms}, b.sleeps.durations())
}

func TestBackoffJitterStaysUnderCeiling(t *testing.T) {
	t.Parallel()
	sleeps := &sleepRecorder{}
	gw := newFakeGateway(t, unavailable(t))
	srv := httptest.NewServer(gw)
	t.Cleanup(srv.Close)
	c, err := client.New(srv.URL, client.WithSleep(sleeps.sleep))
	require.NoError(t, err)

	_, err = c.StartRun(context.Background(), startReq())
	require.Error(t, err)
	got := sleeps.durations()
	require.Len(t, got, client.DefaultMaxAttempts-1)
	ceiling := client.DefaultInitialBackoff
	for _, d := range got {
		require.GreaterOrEqual(t, d, time.Duration(0))
		require.LessOrEqual(t, d, ceiling)
		ceiling *= 2
	}
}

func TestRetriesExhausted(t *testing.T) {
	t.Parallel()
	b := setup(t, []answer{unavailable(t)}, client.WithRetry(client.RetryPolicy{MaxAttempts: 3}))

	_, err := b.client.StartRun(context.Background(), startReq())
	require.ErrorContains(t, err, "3 attempts")
	var e *client.Error
	require.ErrorAs(t, err, &e)
	require.Equal(t, http.StatusServiceUnavailable, e.Status)
	require.True(t, client.IsCode(err, api.CodeUnavailable))
	require.Len(t, b.gw.requests(), 3)
	require.Len(t, b.sleeps.durations(), 2)
}

func TestCancelDuringBackoff(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	waiting := make(chan time.Duration, 1)
	b := setup(t, []answer{unavailable(t)},
		client.WithRetry(client.RetryPolicy{InitialBackoff: time.Hour, MaxBackoff: time.Hour}),
		client.WithSleep(func(ctx context.Context, d time.Duration) error {
			waiting <- d
			return client.SleepCtx(ctx, d) // the real wait
		}))
	go func() {
		<-waiting
		cancel()
	}()

	_, err := b.client.StartRun(ctx, startReq())
	require.ErrorIs(t, err, context.Canceled)
	require.True(t, client.IsCode(err, api.CodeUnavailable), "the last answer stays in the chain: %v", err)
	require.Len(t, b.gw.requests(), 1)
}

func TestNoWaitPastDeadline(t *testing.T) {
	t.Parallel()
	b := setup(t, []answer{{status: 429, header: map[string]string{"Retry-After": "3600"}, body: "{}"}})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	_, err := b.client.StartRun(ctx, startReq())
	var e *client.Error
	require.ErrorAs(t, err, &e)
	require.Equal(t, time.Hour, e.RetryAfter)
	require.NotErrorIs(t, err, context.DeadlineExceeded)
	require.Len(t, b.gw.requests(), 1)
	require.Empty(t, b.sleeps.durations())
}

func TestRetryConnectionRefused(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.NotFoundHandler())
	url := srv.URL
	srv.Close()
	sleeps := &sleepRecorder{}
	c, err := client.New(url, client.WithSleep(sleeps.sleep), client.WithRetry(client.RetryPolicy{MaxAttempts: 3}))
	require.NoError(t, err)

	_, err = c.Signal(context.Background(), "run-1", api.SignalRequest{SignalName: "PAUSE"})
	require.ErrorIs(t, err, syscall.ECONNREFUSED)
	require.ErrorContains(t, err, "3 attempts")
	var e *client.Error
	require.NotErrorAs(t, err, &e, "no answer, no *client.Error")
	require.Len(t, sleeps.durations(), 2)
}

func TestRetryAttemptTimeout(t *testing.T) {
	t.Parallel()
	b := setup(t, []answer{{hang: true}, jsonAnswer(t, http.StatusCreated, startResult("x", false))},
		client.WithHTTPClient(&http.Client{Timeout: 50 * time.Millisecond, Transport: &http.Transport{}}))

	_, err := b.client.StartRun(context.Background(), startReq())
	require.NoError(t, err)
	require.Len(t, b.gw.requests(), 2)
}

func TestNoRetryOnceContextDone(t *testing.T) {
	t.Parallel()
	// The caller gives up while the request is in flight: no retry may
	// follow, whatever the machine's speed.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	b := setup(t, []answer{{hang: true, arrived: cancel}})

	_, err := b.client.StartRun(ctx, startReq())
	require.ErrorIs(t, err, context.Canceled)
	require.Len(t, b.gw.requests(), 1)
	require.Empty(t, b.sleeps.durations())
}
