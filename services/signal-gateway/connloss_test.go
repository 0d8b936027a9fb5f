package gateway_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/weftrun/weft/pkg/api"
	"github.com/weftrun/weft/pkg/events"
	"github.com/weftrun/weft/pkg/streams"
	"github.com/weftrun/weft/pkg/weftest"
	gateway "github.com/weftrun/weft/services/signal-gateway"
)

// cutStack is a gateway whose pool's backends the test can terminate, as
// a Postgres restart or a network cut does.
type cutStack struct {
	*stack
	pool *pgxpool.Pool
	app  string // the pool's application_name
}

// setupCut serves a gateway through a pool of its own of at most conns
// connections that are never pinged when acquired, so a connection
// terminated while idle is found dead by the request that takes it (as
// one that dies within the pool's idle-ping window is).
func setupCut(t *testing.T, conns int32) *cutStack {
	t.Helper()
	db := weftest.NewDB(t)
	cfg, err := pgxpool.ParseConfig(db.URL)
	require.NoError(t, err)
	app := "weft-gw-" + events.NewRunID() // whole: a UUIDv7 begins with the time
	cfg.ConnConfig.RuntimeParams["application_name"] = app
	cfg.MaxConns, cfg.MinConns = conns, 0
	cfg.ShouldPing = func(context.Context, pgxpool.ShouldPingParams) bool { return false }
	pool, err := pgxpool.NewWithConfig(context.Background(), cfg)
	require.NoError(t, err)
	t.Cleanup(pool.Close)
	// Nothing but the test's requests uses the pool.
	gcfg := gateway.Config{DisableScheduler: true, DisableBulkRunner: true, RetentionInterval: time.Hour}
	return &cutStack{stack: setupOn(t, db, pool, gcfg), pool: pool, app: app}
}

// warm opens n connections in the pool and leaves them idle in it.
func (c *cutStack) warm(t *testing.T, n int) {
	t.Helper()
	var held []*pgxpool.Conn
	for range n {
		conn, err := c.pool.Acquire(context.Background())
		require.NoError(t, err)
		require.NoError(t, conn.Ping(context.Background()))
		held = append(held, conn)
	}
	for _, conn := range held {
		conn.Release()
	}
}

// cut terminates every backend of the gateway's pool and waits until they
// are gone; it returns how many there were.
func (c *cutStack) cut(t *testing.T) int {
	t.Helper()
	ctx := context.Background()
	var n int
	require.NoError(t, c.db.Pool.QueryRow(ctx,
		`SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE application_name = $1`, c.app).Scan(&n))
	require.Eventually(t, func() bool {
		var left int
		err := c.db.Pool.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity WHERE application_name = $1`, c.app).Scan(&left)
		return err == nil && left == 0
	}, 10*time.Second, 5*time.Millisecond, "the pool's backends end")
	return n
}

// requireOnce checks that the start of each run request id was taken once
// and each signal id accepted once.
func (c *cutStack) requireOnce(t *testing.T, requestIDs, signalIDs []string) {
	t.Helper()
	ctx := context.Background()
	for _, id := range requestIDs {
		var n int
		require.NoError(t, c.db.Pool.QueryRow(ctx, `SELECT count(*) FROM run_events e JOIN run_requests r ON r.run_id = e.run_id
			WHERE r.run_request_id = $1 AND e.event_type = 'RunApproved'`, id).Scan(&n))
		require.Equal(t, 1, n, "run request %s approved once", id)
	}
	for _, id := range signalIDs {
		var n int
		require.NoError(t, c.db.Pool.QueryRow(ctx, `SELECT count(*) FROM signal_acceptances WHERE signal_id = $1`, id).Scan(&n))
		require.Equal(t, 1, n, "signal %s accepted once", id)
	}
}

// A connection lost before anything committed is tried again by the
// gateway itself: the caller gets its answer, over every transport.
func TestLostConnectionIsRetriedOnce(t *testing.T) {
	t.Parallel()
	c := setupCut(t, 1)
	runID := c.run(t)
	var requests, signals []string

	require.Equal(t, 1, c.cut(t))
	id := "rest-" + events.NewRunID()
	a := c.post(t, "/v1/runs", startBody(id))
	require.Equal(t, http.StatusCreated, a.status, "REST start: %s", a.body)
	requests = append(requests, id)

	require.Equal(t, 1, c.cut(t))
	a = c.post(t, "/v1/runs/"+runID+"/signals", map[string]any{"signalName": "go", "signalId": "rest-sig"})
	require.Equal(t, http.StatusAccepted, a.status, "REST signal: %s", a.body)
	signals = append(signals, "rest-sig")

	require.Equal(t, 1, c.cut(t))
	id = "rpc-" + events.NewRunID()
	start, err := json.Marshal(startBody(id))
	require.NoError(t, err)
	r := c.rpcOne(t, fmt.Sprintf(`{"jsonrpc":"2.0","method":"run.start","params":%s,"id":1}`, start))
	require.Nil(t, r.Error, "JSON-RPC start")
	requests = append(requests, id)

	require.Equal(t, 1, c.cut(t))
	subject, err := streams.SignalSubject(runID)
	require.NoError(t, err)
	status, body, _ := c.request(t, subject, operatorToken, []byte(`{"signalName":"go","signalId":"nats-sig"}`))
	require.Equal(t, http.StatusAccepted, status, "NATS signal: %s", body)
	signals = append(signals, "nats-sig")

	c.requireOnce(t, requests, signals)
}

// When the second try loses its connection too, the answer is 503 with a
// wait, in each transport's shape, never 500; the caller's retry with the
// same id is taken once.
func TestLostConnectionTwiceIsUnavailable(t *testing.T) {
	t.Parallel()
	c := setupCut(t, 2)
	runID := c.run(t)

	// Both idle connections dead: the first try takes one, the retry the other.
	c.warm(t, 2)
	require.Equal(t, 2, c.cut(t))
	id := "rest-" + events.NewRunID()
	a := c.post(t, "/v1/runs", startBody(id))
	require.Equal(t, http.StatusServiceUnavailable, a.status, "%s", a.body)
	require.Equal(t, "1", a.header.Get("Retry-After"))
	require.Equal(t, api.CodeUnavailable, a.errorBody(t).Code)
	a = c.post(t, "/v1/runs", startBody(id))
	require.Equal(t, http.StatusCreated, a.status, "the caller's retry: nothing had committed; %s", a.body)

	c.warm(t, 2)
	require.Equal(t, 2, c.cut(t))
	r := c.rpcOne(t, `{"jsonrpc":"2.0","method":"signal.send","params":{"workflowId":"`+runID+`","signalName":"go","signalId":"rpc-sig"},"id":1}`)
	require.NotNil(t, r.Error)
	require.Equal(t, -32053, r.Error.Code)
	require.Equal(t, api.CodeUnavailable, r.Error.Data.Code)
	require.EqualValues(t, 1, r.Error.Data.Details["retryAfter"])
	r = c.rpcOne(t, `{"jsonrpc":"2.0","method":"signal.send","params":{"workflowId":"`+runID+`","signalName":"go","signalId":"rpc-sig"},"id":2}`)
	require.Nil(t, r.Error, "the caller's retry")

	c.warm(t, 2)
	require.Equal(t, 2, c.cut(t))
	subject, err := streams.SignalSubject(runID)
	require.NoError(t, err)
	status, body, hdr := c.request(t, subject, operatorToken, []byte(`{"signalName":"go","signalId":"nats-sig"}`))
	require.Equal(t, http.StatusServiceUnavailable, status, "%s", body)
	require.Equal(t, "1", hdr.Get("Retry-After"))
	status, body, _ = c.request(t, subject, operatorToken, []byte(`{"signalName":"go","signalId":"nats-sig"}`))
	require.Equal(t, http.StatusAccepted, status, "the caller's retry: %s", body)

	c.requireOnce(t, []string{id}, []string{"rpc-sig", "nats-sig"})
}

// While the gateway's connections are cut again and again, every answer
// to a start or a signal is a success or 503 with Retry-After, never 500;
// callers that retry with the same ids get every start taken once and
// every signal accepted once.
func TestConnectionsCutUnderLoad(t *testing.T) {
	t.Parallel()
	c := setupCut(t, 4)
	const callers, perCaller, maxTries = 4, 15, 20

	// The cutter terminates the pool's backends after every cutEvery
	// answers, so requests are cut at every stage of their transactions
	// and callers still make progress between cuts.
	const cutEvery = 3
	progress, done := make(chan struct{}, callers), make(chan struct{})
	cutterDone := make(chan int)
	go func() {
		cuts := 0
		defer func() { cutterDone <- cuts }()
		for {
			for range cutEvery {
				select {
				case <-done:
					return
				case <-progress:
				}
			}
			var n int
			if c.db.Pool.QueryRow(context.Background(),
				`SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE application_name = $1`, c.app).Scan(&n) == nil {
				cuts += n
			}
		}
	}()

	var mu sync.Mutex
	var requests, signals []string
	var faults []error
	unavailable := 0
	// send posts body until it is answered one of want, and refuses any
	// answer but those and a 503 with Retry-After. A start answered 503
	// may have committed: its retry may be answered as a duplicate, 200.
	send := func(path string, body []byte, want ...int) (answer, error) {
		for try := range maxTries {
			a, err := c.do(t, http.MethodPost, path, operatorToken, body)
			select {
			case progress <- struct{}{}:
			case <-done:
			}
			switch {
			case err != nil:
				return a, fmt.Errorf("%s: %w", path, err)
			case slices.Contains(want, a.status) || (try > 0 && a.status == http.StatusOK):
				return a, nil
			case a.status != http.StatusServiceUnavailable || a.header.Get("Retry-After") == "":
				return a, fmt.Errorf("try %d of %s: %d (Retry-After %q): %s", try, path, a.status, a.header.Get("Retry-After"), a.body)
			}
			mu.Lock()
			unavailable++
			mu.Unlock()
		}
		return answer{}, fmt.Errorf("%s: not answered %v in %d tries", path, want, maxTries)
	}
	caller := func(w int) error {
		for i := range perCaller {
			id := fmt.Sprintf("load-%d-%d", w, i)
			start, err := json.Marshal(startBody(id))
			if err != nil {
				return err
			}
			a, err := send("/v1/runs", start, http.StatusCreated)
			if err != nil {
				return err
			}
			var run api.StartRunResult
			if err := json.Unmarshal(a.body, &run); err != nil {
				return err
			}
			sigID := id + "-sig"
			sig := []byte(`{"signalName":"go","signalId":"` + sigID + `"}`)
			if _, err := send("/v1/runs/"+run.RunID+"/signals", sig, http.StatusAccepted); err != nil {
				return err
			}
			mu.Lock()
			requests, signals = append(requests, id), append(signals, sigID)
			mu.Unlock()
		}
		return nil
	}
	var wg sync.WaitGroup
	for w := range callers {
		wg.Go(func() {
			if err := caller(w); err != nil {
				mu.Lock()
				faults = append(faults, err)
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	close(done)
	cuts := <-cutterDone
	require.Empty(t, faults)
	require.Positive(t, cuts, "connections were cut")
	t.Logf("%d backends terminated; %d answers 503", cuts, unavailable)
	require.Len(t, requests, callers*perCaller)
	c.requireOnce(t, requests, signals)
}
