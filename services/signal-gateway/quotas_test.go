package gateway_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/weftrun/weft/internal/boot/metrics"
	"github.com/weftrun/weft/internal/boot/metrics/metricstest"
	"github.com/weftrun/weft/pkg/api"
	"github.com/weftrun/weft/pkg/weftest"
	gateway "github.com/weftrun/weft/services/signal-gateway"
	"github.com/weftrun/weft/services/signal-gateway/internal/jsonrpc"
)

// quotaCase is one per-tenant quota: the resource's REST path, its
// JSON-RPC create method, a body of id in a tenant, and its table.
type quotaCase struct {
	name, path, method, table, limit string
	body                             func(id, tenant string) map[string]any
}

var quotaCases = []quotaCase{
	{"schedules", "/v1/schedules", "schedule.create", "schedules", "schedule_quota", func(id, tenant string) map[string]any {
		return scheduleBody(id, "tenantId", tenant)
	}},
	{"triggers", "/v1/triggers", "trigger.create", "triggers", "trigger_quota", func(id, tenant string) map[string]any {
		return map[string]any{"triggerId": id, "tenantId": tenant, "projectId": "p", "environmentId": "dev", "plan": json.RawMessage(planDoc)}
	}},
}

func quotaSetup(t *testing.T, quota int) (*stack, http.Handler) {
	t.Helper()
	mp, h, err := metrics.New()
	require.NoError(t, err)
	return setup(t, gateway.Config{DisableScheduler: true, MeterProvider: mp,
		Schedules: gateway.ScheduleConfig{MaxPerTenant: quota}, Triggers: gateway.TriggerConfig{MaxPerTenant: quota}}), h
}

// rows counts the rows of table of tenant in the stack's database, of
// every tenant when tenant is "".
func (s *stack) rows(t *testing.T, table, tenant string) int {
	t.Helper()
	var n int
	require.NoError(t, s.db.Pool.QueryRow(context.Background(),
		`SELECT count(*) FROM `+table+` WHERE $1 = '' OR tenant_id = $1`, tenant).Scan(&n)) //nolint:gosec // table is a test constant
	return n
}

func (s *stack) createAs(t *testing.T, token string, q quotaCase, id, tenant string) answer {
	t.Helper()
	raw, err := json.Marshal(q.body(id, tenant))
	require.NoError(t, err)
	a, err := s.do(t, http.MethodPost, q.path, token, raw)
	require.NoError(t, err)
	return a
}

// TestTenantQuota: at quota-1 a create passes; at the quota one is refused
// with 409 QuotaExceeded over REST and -32009 over JSON-RPC, and nothing
// is written; repeating an existing create still answers it; another
// tenant is unaffected; deleting one makes room.
func TestTenantQuota(t *testing.T) {
	t.Parallel()
	for _, q := range quotaCases {
		t.Run(q.name, func(t *testing.T) {
			t.Parallel()
			s, h := quotaSetup(t, 3)
			for i := range 3 {
				a := s.createAs(t, operatorToken, q, fmt.Sprint("q-", i), "acme")
				require.Equal(t, http.StatusCreated, a.status, "%d of the quota: %s", i+1, a.body)
			}
			a := s.createAs(t, operatorToken, q, "q-past", "acme")
			require.Equal(t, http.StatusConflict, a.status, "%s", a.body)
			e := a.errorBody(t)
			require.Equal(t, api.CodeQuotaExceeded, e.Code)
			require.Equal(t, q.name, e.Details["resource"])
			require.InDelta(t, 3, e.Details["limit"], 0)
			require.Equal(t, 3, s.rows(t, q.table, "acme"), "the refused create wrote nothing")

			params, err := json.Marshal(q.body("q-rpc", "acme"))
			require.NoError(t, err)
			r := s.rpcOne(t, fmt.Sprintf(`{"jsonrpc":"2.0","method":%q,"params":%s,"id":1}`, q.method, params))
			require.NotNil(t, r.Error)
			require.Equal(t, jsonrpc.CodeConflict, r.Error.Code)
			require.Equal(t, api.CodeQuotaExceeded, r.Error.Data.Code)

			a = s.createAs(t, operatorToken, q, "q-0", "acme")
			require.Equal(t, http.StatusOK, a.status, "a repeat of an existing create is answered: %s", a.body)

			a = s.createAs(t, strangerToken, q, "q-past", "globex")
			require.Equal(t, http.StatusCreated, a.status, "another tenant has its own quota: %s", a.body)

			a, err = s.do(t, http.MethodDelete, q.path+"/q-1", operatorToken, nil)
			require.NoError(t, err)
			require.Equal(t, http.StatusNoContent, a.status, "%s", a.body)
			a = s.createAs(t, operatorToken, q, "q-past", "acme")
			require.Equal(t, http.StatusCreated, a.status, "a delete made room: %s", a.body)

			sc := metricstest.Get(t, h)
			require.Equal(t, int64(1), sc.Count(t, "weft_gateway_limit_refusals_total", map[string]string{"limit": q.limit, "transport": "http"}))
			require.Equal(t, int64(1), sc.Count(t, "weft_gateway_limit_refusals_total", map[string]string{"limit": q.limit, "transport": "jsonrpc"}))
		})
	}
}

// TestTenantQuotaConcurrentCreates: creates racing for the last places
// never pass the quota together.
func TestTenantQuotaConcurrentCreates(t *testing.T) {
	t.Parallel()
	const quota, racers = 4, 12
	for _, q := range quotaCases {
		t.Run(q.name, func(t *testing.T) {
			t.Parallel()
			s, _ := quotaSetup(t, quota)
			a := s.createAs(t, operatorToken, q, "first", "acme")
			require.Equal(t, http.StatusCreated, a.status, "%s", a.body)

			statuses := make([]int, racers)
			var wg sync.WaitGroup
			for i := range racers {
				raw, err := json.Marshal(q.body(fmt.Sprint("race-", i), "acme"))
				require.NoError(t, err)
				wg.Go(func() { statuses[i] = s.postStatus(q.path, operatorToken, raw) })
			}
			wg.Wait()
			byStatus := map[int]int{}
			for _, st := range statuses {
				byStatus[st]++
			}
			require.Equal(t, map[int]int{http.StatusCreated: quota - 1, http.StatusConflict: racers - quota + 1}, byStatus)
			require.Equal(t, quota, s.rows(t, q.table, "acme"))
		})
	}
}

// postStatus posts body as token's and returns the status, 0 when the
// exchange failed; safe to call from any goroutine.
func (s *stack) postStatus(path, token string, body []byte) int {
	req, err := http.NewRequestWithContext(context.Background(), http.MethodPost, s.base+path, bytes.NewReader(body))
	if err != nil {
		return 0
	}
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0
	}
	_ = resp.Body.Close()
	return resp.StatusCode
}

func TestTenantQuotaRefusesNegative(t *testing.T) {
	t.Parallel()
	pool := weftest.NewDB(t).Pool
	for _, cfg := range []gateway.Config{
		{Schedules: gateway.ScheduleConfig{MaxPerTenant: -1}},
		{Triggers: gateway.TriggerConfig{MaxPerTenant: -1}},
	} {
		cfg.Keys = testKeys(t)
		_, err := gateway.New(pool, nil, cfg)
		require.ErrorContains(t, err, "negative", "%+v", cfg)
	}
}
