package gateway_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/weftrun/weft/internal/boot/httpserve"
	"github.com/weftrun/weft/internal/boot/metrics"
	"github.com/weftrun/weft/internal/boot/metrics/metricstest"
	"github.com/weftrun/weft/internal/policy/keylimit"
	"github.com/weftrun/weft/pkg/api"
	"github.com/weftrun/weft/pkg/streams"
	"github.com/weftrun/weft/pkg/weftest"
	gateway "github.com/weftrun/weft/services/signal-gateway"
	"github.com/weftrun/weft/services/signal-gateway/internal/intaketest"
	"github.com/weftrun/weft/services/signal-gateway/internal/jsonrpc"
)

// keyRateSetup is a gateway whose keys may make burst requests at once and
// one a second after, on a clock the test moves.
func keyRateSetup(t *testing.T, burst int) (*stack, *intaketest.Clock, http.Handler) {
	t.Helper()
	mp, h, err := metrics.New()
	require.NoError(t, err)
	clk := intaketest.NewClock(time.Date(2026, 3, 2, 9, 0, 0, 0, time.UTC))
	s := setup(t, gateway.Config{DisableScheduler: true, MeterProvider: mp,
		KeyRate: keylimit.Limit{Rate: 1, Burst: burst}, Intake: gateway.IntakeConfig{Now: clk.Now}})
	return s, clk, h
}

func startJSON(t *testing.T, requestID string) []byte {
	t.Helper()
	raw, err := json.Marshal(startBody(requestID))
	require.NoError(t, err)
	return raw
}

// requireKeyRateLimited checks a REST or NATS refusal by the key's rate.
func requireKeyRateLimited(t *testing.T, body []byte, header http.Header) {
	t.Helper()
	require.Equal(t, "1", header.Get("Retry-After"), "one token at 1/s")
	var b api.ErrorBody
	require.NoError(t, json.Unmarshal(body, &b), "%s", body)
	require.Equal(t, api.CodeRateLimited, b.Error.Code)
	require.Equal(t, "op", b.Error.Details["keyId"])
	require.InDelta(t, 1, b.Error.Details["retryAfter"], 0)
}

// TestKeyRateREST: the key's burst passes, the next request is refused
// with 429 and Retry-After before anything is written, another key is
// unaffected, and the key passes again once the wait it was told has
// passed.
func TestKeyRateREST(t *testing.T) {
	t.Parallel()
	s, clk, h := keyRateSetup(t, 3)
	for i := range 3 {
		a := s.post(t, "/v1/runs", startBody(fmt.Sprint("burst-", i)))
		require.Equal(t, http.StatusCreated, a.status, "request %d of the burst: %s", i+1, a.body)
	}
	before := s.counts(t)
	a := s.post(t, "/v1/runs", startBody("past-burst"))
	require.Equal(t, http.StatusTooManyRequests, a.status, "%s", a.body)
	requireKeyRateLimited(t, a.body, a.header)
	require.Equal(t, before, s.counts(t), "the refused start wrote nothing")

	a, err := s.do(t, http.MethodGet, "/v1/schedules", operatorToken, nil)
	require.NoError(t, err)
	require.Equal(t, http.StatusTooManyRequests, a.status, "reads count too")

	a, err = s.do(t, http.MethodGet, "/v1/schedules", strangerToken, nil)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, a.status, "another key has its own bucket: %s", a.body)

	clk.Add(time.Second)
	a = s.post(t, "/v1/runs", startBody("past-burst"))
	require.Equal(t, http.StatusCreated, a.status, "after Retry-After: %s", a.body)
	require.Equal(t, int64(2), metricstest.Get(t, h).Count(t, "weft_gateway_limit_refusals_total",
		map[string]string{"limit": "key_rate", "transport": "http"}))
}

// TestKeyRateJSONRPCBatch: a batch costs one token per call; a batch the
// bucket cannot pay is refused whole, HTTP 429 with a JSON-RPC error of id
// null, before any call runs.
func TestKeyRateJSONRPCBatch(t *testing.T) {
	t.Parallel()
	s, _, h := keyRateSetup(t, 5)
	batch := func(ids ...string) string {
		calls := make([]string, len(ids))
		for i, id := range ids {
			calls[i] = fmt.Sprintf(`{"jsonrpc":"2.0","method":"run.start","params":%s,"id":%q}`, startJSON(t, id), id)
		}
		return "[" + strings.Join(calls, ",") + "]"
	}
	status, raw := s.rpc(t, batch("a", "b", "c"))
	require.Equal(t, http.StatusOK, status, "%s", raw)
	for _, r := range decodeAs[[]rpcResponse](t, raw) {
		require.Nil(t, r.Error, "%s", raw)
	}

	before := s.counts(t)
	a := s.post(t, "/rpc", []byte(batch("d", "e", "f")))
	require.Equal(t, http.StatusTooManyRequests, a.status, "3 calls, 2 tokens left: %s", a.body)
	require.Equal(t, "1", a.header.Get("Retry-After"))
	r := decodeAs[rpcResponse](t, a.body)
	require.Equal(t, "null", string(r.ID))
	require.NotNil(t, r.Error, "%s", a.body)
	require.Equal(t, jsonrpc.CodeRateLimited, r.Error.Code)
	require.Equal(t, api.CodeRateLimited, r.Error.Data.Code)
	require.Equal(t, before, s.counts(t), "no call of the refused batch ran")

	status, raw = s.rpc(t, batch("d", "e"))
	require.Equal(t, http.StatusOK, status, "the refusal took nothing: 2 calls pass: %s", raw)
	require.Equal(t, int64(1), metricstest.Get(t, h).Count(t, "weft_gateway_limit_refusals_total",
		map[string]string{"limit": "key_rate", "transport": "jsonrpc"}))
}

// TestKeyRateNATS: the NATS ingress shares the key's bucket with HTTP
// and answers a refusal with Weft-Status 429 and Retry-After.
func TestKeyRateNATS(t *testing.T) {
	t.Parallel()
	s, clk, h := keyRateSetup(t, 2)
	status, body, _ := s.request(t, streams.RunStartSubject, operatorToken, startJSON(t, "nats-1"))
	require.Equal(t, http.StatusCreated, status, "%s", body)
	a := s.post(t, "/v1/runs", startBody("http-1"))
	require.Equal(t, http.StatusCreated, a.status, "%s", a.body)

	before := s.counts(t)
	status, body, header := s.request(t, streams.RunStartSubject, operatorToken, startJSON(t, "nats-2"))
	require.Equal(t, http.StatusTooManyRequests, status, "%s", body)
	requireKeyRateLimited(t, body, http.Header(header))
	require.Equal(t, before, s.counts(t))

	status, body, _ = s.request(t, streams.RunStartSubject, strangerToken, []byte(`{}`))
	require.Equal(t, http.StatusBadRequest, status, "another key passes the limit, to the decoder: %s", body)

	clk.Add(time.Second)
	status, body, _ = s.request(t, streams.RunStartSubject, operatorToken, startJSON(t, "nats-2"))
	require.Equal(t, http.StatusCreated, status, "%s", body)
	require.Equal(t, int64(1), metricstest.Get(t, h).Count(t, "weft_gateway_limit_refusals_total",
		map[string]string{"limit": "key_rate", "transport": "nats"}))
}

// TestKeyRateDefaultAndOff: the zero KeyRate is keylimit's default, whose
// burst is the edge; keylimit.Off lets a key past it.
func TestKeyRateDefaultAndOff(t *testing.T) {
	t.Parallel()
	clk := intaketest.NewClock(time.Date(2026, 3, 2, 9, 0, 0, 0, time.UTC))
	for _, tc := range []struct {
		name  string
		limit keylimit.Limit
		want  int
	}{
		{"default", keylimit.Limit{}, http.StatusTooManyRequests},
		{"off", keylimit.Off, http.StatusOK},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s := setup(t, gateway.Config{DisableScheduler: true, KeyRate: tc.limit, Intake: gateway.IntakeConfig{Now: clk.Now}})
			for i := range keylimit.DefaultBurst {
				a, err := s.do(t, http.MethodGet, "/v1/schedules", operatorToken, nil)
				require.NoError(t, err)
				require.Equal(t, http.StatusOK, a.status, "request %d: %s", i+1, a.body)
			}
			a, err := s.do(t, http.MethodGet, "/v1/schedules", operatorToken, nil)
			require.NoError(t, err)
			require.Equal(t, tc.want, a.status, "%s", a.body)
		})
	}
}

func TestKeyRateRefusesBadConfig(t *testing.T) {
	t.Parallel()
	_, err := gateway.New(weftest.NewDB(t).Pool, nil, gateway.Config{Keys: testKeys(t), KeyRate: keylimit.Limit{Rate: 1, Burst: -1}})
	require.ErrorIs(t, err, keylimit.ErrConfig)
}

// TestKeyRateParallelStarts reproduces issue #17's 1,000 parallel starts
// from one key: under the default KeyRate, on a clock that does not move,
// exactly the burst is approved and every other start is refused 429
// without a row written.
func TestKeyRateParallelStarts(t *testing.T) {
	t.Parallel()
	const starts = 1000
	clk := intaketest.NewClock(time.Date(2026, 3, 2, 9, 0, 0, 0, time.UTC))
	// 1,000 connections from one address, past the listener's connection
	// caps, which this test is not about (httpserve's tests are).
	s := setup(t, gateway.Config{DisableScheduler: true, Intake: gateway.IntakeConfig{Now: clk.Now},
		HTTP: httpserve.Limits{MaxConns: -1, MaxConnsPerAddr: -1}})
	bodies := make([][]byte, starts)
	for i := range bodies {
		bodies[i] = startJSON(t, fmt.Sprint("flood-", i))
	}
	statuses := make([]int, starts)
	var wg sync.WaitGroup
	for i := range starts {
		wg.Go(func() { statuses[i] = s.postStatus("/v1/runs", operatorToken, bodies[i]) })
	}
	wg.Wait()
	byStatus := map[int]int{}
	for _, st := range statuses {
		byStatus[st]++
	}
	require.Equal(t, map[int]int{http.StatusCreated: keylimit.DefaultBurst, http.StatusTooManyRequests: starts - keylimit.DefaultBurst}, byStatus)
	require.Equal(t, keylimit.DefaultBurst, s.counts(t).requests, "a run request row for each approved start, none for a refused one")
}
