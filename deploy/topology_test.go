package deploy

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/url"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"

	"github.com/weftrun/weft/internal/boot/health"
	"github.com/weftrun/weft/internal/policy/auth"
	"github.com/weftrun/weft/pkg/api"
	"github.com/weftrun/weft/pkg/streams"
)

// testToken is the API key of the topology's gateway and projector.
const testToken = "weft_topology_test_token"

// testTaskKey is the engine's task key (base64 of 32 bytes).
const testTaskKey = "dG9wb2xvZ3ktdGVzdC10YXNrLWtleS0zMi1ieXRlcyE="

// topology is the compose topology run as local processes.
type topology struct {
	bin       binaries
	db        *rolesDB
	nats      *natsProcess
	gateway   string // base URL of the gateway's API
	projector string // base URL of the read API
	// ops holds each service's ops base URL and its process.
	ops map[string]opsOf
}

type opsOf struct {
	url string
	p   *process
}

// The compose topology as separate local processes: a nats-server process
// from deploy/nats.conf, a fresh database with the roles of
// deploy/postgres/roles.sql, a one-shot `weft migrate` as the migrator
// (schema, grants.sql, streams), then the relay, the engine, a worker, the
// gateway and the projector, each as its own Postgres role and NATS user,
// none allowed to create streams. A run started through the gateway's
// HTTP API waits at an approval gate, is approved through the NATS
// ingress, and is seen COMPLETED through the projector's read API. Then
// each service's /readyz names its checks, nats-server has logged no
// permission violation, and the roles and users are refused what their
// service never does.
func TestTopologyAsProcesses(t *testing.T) {
	if testing.Short() {
		t.Skip("builds weft and nats-server and runs the whole topology")
	}
	t.Parallel()
	top := startTopology(t)

	runID := startApprovalRun(t, top)
	waitForEvent(t, top, runID, func(e eventView) bool { return e.StepID == "gate" }, "the gate waits")
	approveOverNATS(t, top, runID)
	waitFor(t, top.ops["projector"].p, "run "+runID+" COMPLETED in the read API", func() bool {
		status, body := httpGet(t, top.projector+"/v1/runs/"+runID, testToken)
		var run struct {
			Status string `json:"status"`
		}
		return status == http.StatusOK && json.Unmarshal(body, &run) == nil && run.Status == "COMPLETED"
	})

	for name, want := range map[string][]string{
		"relay": {"postgres", "nats", "stream WEFT_EVENTS", "stream WEFT_TASKS"},
		"engine": {"postgres", "nats", "stream WEFT_EVENTS", "stream WEFT_RESULTS",
			"consumer engine-events-0", "consumer engine-results-0"},
		"worker":    {"nats", "stream WEFT_TASKS", "stream WEFT_RESULTS", "consumer tasks-default"},
		"gateway":   {"postgres", "nats"},
		"projector": {"postgres", "nats", "stream WEFT_EVENTS", "consumer projector"},
		"maintain":  {"postgres"},
	} {
		status, body := httpGet(t, top.ops[name].url+"/readyz", "")
		require.Equal(t, http.StatusOK, status, "%s: %s", name, body)
		var r health.Report
		require.NoError(t, json.Unmarshal(body, &r))
		var names []string
		for _, c := range r.Checks {
			require.Equal(t, "ok", c.Status, "%s: %s", name, c.Name)
			names = append(names, c.Name)
		}
		require.Equal(t, want, names, name)
	}
	healthCommand(t, top)
	runtimeMetrics(t, top)
	require.Empty(t, linesWith(top.nats.out.String(), "Violation"), "no service was refused a subject it uses")
	for name, o := range top.ops {
		require.Empty(t, linesWith(o.p.out.String(), "SQLSTATE 42501"), "%s was refused no table it uses", name)
		require.Empty(t, linesWith(o.p.out.String(), "ermissions Violation"), "%s was refused no subject it uses", name)
	}

	refusedInPostgres(t, top.db)
	refusedInNATS(t, top.nats)
}

// healthCommand runs `weft health`, the image's healthcheck, on a ready
// service's /readyz and on an address nothing listens on.
func healthCommand(t *testing.T, top *topology) {
	t.Helper()
	ready := startProcess(t, "weft health", top.bin.weft, []string{"health", "--url", top.ops["engine"].url + "/readyz"})
	require.NoError(t, ready.wait(t), "weft health on a ready service (is runHealth registered as \"health\" in commands()?): %s", ready.out.String())
	require.Contains(t, ready.out.String(), `"status":"ok"`)
	down := startProcess(t, "weft health", top.bin.weft, []string{"health", "--url", "http://" + freeAddr(t) + "/readyz"})
	require.Error(t, down.wait(t), "weft health fails when nothing answers")
}

// linesWith returns the lines of s that contain sub.
func linesWith(s, sub string) []string {
	var out []string
	for line := range strings.Lines(s) {
		if strings.Contains(line, sub) {
			out = append(out, line)
		}
	}
	return out
}

// startTopology builds the binaries and starts every process, the services
// once migrate has succeeded, and waits until each service is ready.
func startTopology(t *testing.T) *topology {
	t.Helper()
	bin := buildBinaries(t)
	secrets := topologySecrets(t, bin)
	top := &topology{bin: bin, db: newRolesDB(t), nats: startNATSServer(t, bin.natsServer, secrets), ops: map[string]opsOf{}}

	migrate := startProcess(t, "migrate", bin.weft, []string{"migrate"},
		append(top.credentials(secrets, "migrate", "weft_migrator", "migrate"), "WEFT_GRANTS_FILE=postgres/grants.sql")...)
	require.NoError(t, migrate.wait(t), migrate.out.String())
	for _, want := range []string{"applied migrations", "applied grants from postgres/grants.sql", "streams are up to date"} {
		require.Contains(t, migrate.out.String(), want)
	}

	keys := "WEFT_API_KEYS_FILE="
	gatewayAddr, projectorAddr := freeAddr(t), freeAddr(t)
	top.gateway, top.projector = "http://"+gatewayAddr, "http://"+projectorAddr
	services := []struct {
		name, role string
		env        []string
	}{
		{"relay", "weft_relay", nil},
		{"engine", "weft_engine", []string{"WEFT_TASK_KEY_FILE=" + filepath.Join(secrets, "engine", "task-key")}},
		{"worker", "", nil},
		{"gateway", "weft_gateway", []string{"WEFT_GATEWAY_ADDR=" + gatewayAddr, keys + filepath.Join(secrets, "gateway", "api-keys")}},
		{"projector", "weft_projector", []string{"WEFT_PROJECTOR_ADDR=" + projectorAddr,
			"WEFT_GATEWAY_URL=" + top.gateway, keys + filepath.Join(secrets, "projector", "api-keys")}},
	}
	for _, s := range services {
		opsAddr := freeAddr(t)
		env := append(top.credentials(secrets, s.name, s.role, s.name), "WEFT_ENSURE_STREAMS=false",
			"WEFT_"+strings.ToUpper(s.name)+"_OPS_ADDR="+opsAddr)
		p := startProcess(t, s.name, bin.weft, []string{s.name}, append(env, s.env...)...)
		top.ops[s.name] = opsOf{url: "http://" + opsAddr, p: p}
	}
	top.ops["maintain"] = startMaintain(t, top, secrets)
	for name, o := range top.ops {
		waitFor(t, o.p, name+" ready", func() bool {
			status, _ := httpGet(t, o.url+"/readyz", "")
			return status == http.StatusOK
		})
	}
	return top
}

// startMaintain starts `weft maintain` as compose does, with the maintain
// service's WEFT_MAINTAIN_EVERY, as the schema owner, on an ops address of
// its own.
func startMaintain(t *testing.T, top *topology, secrets string) opsOf {
	t.Helper()
	every := env(service(t, loadProject(t), "maintain"), "WEFT_MAINTAIN_EVERY")
	require.NotEmpty(t, every, "maintain repeats its pass, so it serves its ops listener")
	opsAddr := freeAddr(t)
	p := startProcess(t, "maintain", top.bin.weft, []string{"maintain"},
		append(top.credentials(secrets, "maintain", "weft_migrator", ""), "WEFT_MAINTAIN_EVERY="+every, "WEFT_MAINTAIN_OPS_ADDR="+opsAddr)...)
	return opsOf{url: "http://" + opsAddr, p: p}
}

// topologySecrets runs `weft secrets init`, as compose's one-shot service
// secrets does, into a folder it returns, with the test's values: each
// NATS user's password "pw-<user>" (natsProcess.url), each role's
// "weft-topology-test" (rolesDB), testTaskKey and testToken's admin key.
func topologySecrets(t *testing.T, bin binaries) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "secrets")
	env := []string{"WEFT_TASK_KEY=" + testTaskKey, "WEFT_API_KEYS=topology default admin " + auth.HashKey(testToken)}
	for _, u := range natsUsers {
		env = append(env, "WEFT_NATS_"+strings.ToUpper(u)+"_PASSWORD=pw-"+u)
	}
	for _, r := range []string{"POSTGRES", "PG_MIGRATOR", "PG_GATEWAY", "PG_ENGINE", "PG_RELAY", "PG_PROJECTOR"} {
		env = append(env, "WEFT_"+r+"_PASSWORD=weft-topology-test")
	}
	p := startProcess(t, "secrets init", bin.weft, []string{"secrets", "init", "--dir", dir}, env...)
	require.NoError(t, p.wait(t), p.out.String())
	return dir
}

// credentials are the variables that give the service whose folder of
// secrets is dir its Postgres role (none when "") and its NATS user (none
// when ""), as compose.yaml does: URLs without a password, and the
// passwords in files, PGPASSFILE and WEFT_NATS_PASSWORD_FILE.
func (top *topology) credentials(secrets, dir, role, natsUser string) []string {
	var env []string
	if role != "" {
		u := *top.db.adminURL
		u.User = url.User(role)
		env = append(env, "WEFT_DATABASE_URL="+u.String(), "PGPASSFILE="+filepath.Join(secrets, dir, "pgpass"))
	}
	if natsUser != "" {
		env = append(env, "WEFT_NATS_URL=nats://"+natsUser+"@"+top.nats.addr,
			"WEFT_NATS_PASSWORD_FILE="+filepath.Join(secrets, dir, "nats-password"))
	}
	return env
}

// startApprovalRun starts a run whose second step waits for the signal
// "approve", through the gateway's REST API, and returns its id.
func startApprovalRun(t *testing.T, top *topology) string {
	t.Helper()
	body, err := json.Marshal(api.StartRunRequest{TenantID: "default", ProjectID: "topology", EnvironmentID: "test",
		PlanID: "approval", PlanVersion: "1", RunRequestID: "topology-1",
		Plan: json.RawMessage(`{"planId":"approval","planVersion":"1","steps":[
			{"id":"prepare","activity":"echo","input":{"x":1}},
			{"id":"gate","kind":"waitSignal","signal":"approve","dependsOn":["prepare"]},
			{"id":"ship","activity":"echo","dependsOn":["gate"]}]}`)})
	require.NoError(t, err)
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, top.gateway+"/v1/runs", bytes.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+testToken)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer func() { _ = resp.Body.Close() }()
	var res api.StartRunResult
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&res))
	require.Equal(t, http.StatusCreated, resp.StatusCode)
	require.NotEmpty(t, res.RunID)
	return res.RunID
}

// eventView is what the test reads of an event from the read API.
type eventView struct {
	StepID    string `json:"stepId"`
	EventType string `json:"eventType"`
}

// waitForEvent waits until the read API lists an event of the run that
// matches want.
func waitForEvent(t *testing.T, top *topology, runID string, want func(eventView) bool, what string) {
	t.Helper()
	waitFor(t, top.ops["projector"].p, what, func() bool {
		status, body := httpGet(t, top.projector+"/v1/runs/"+runID+"/events?limit=1000", testToken)
		var page struct {
			Events []eventView `json:"events"`
		}
		if status != http.StatusOK || json.Unmarshal(body, &page) != nil {
			return false
		}
		for _, e := range page.Events {
			if want(e) {
				return true
			}
		}
		return false
	})
}

// approveOverNATS sends the run its "approve" signal through the gateway's
// NATS ingress, as the user client, and checks the answer.
func approveOverNATS(t *testing.T, top *topology, runID string) {
	t.Helper()
	nc, err := nats.Connect(top.nats.url("client"))
	require.NoError(t, err)
	defer nc.Close()
	subject, err := streams.SignalSubject(runID)
	require.NoError(t, err)
	msg := nats.NewMsg(subject)
	msg.Header.Set("Authorization", "Bearer "+testToken)
	msg.Data = []byte(`{"signalName":"approve","signalId":"topology-approve","payload":{"by":"topology test"}}`)
	reply, err := nc.RequestMsg(msg, step)
	require.NoError(t, err)
	require.Equal(t, "202", reply.Header.Get("Weft-Status"), string(reply.Data))
}

// refusedInPostgres checks that each role is refused what its service
// never does.
func refusedInPostgres(t *testing.T, db *rolesDB) {
	t.Helper()
	for _, c := range []struct{ role, sql string }{
		{"weft_projector", `INSERT INTO outbox (partition, order_key, subject, payload, dedupe_id) VALUES (0, 'k', 's', '', 'd')`},
		{"weft_projector", `SELECT count(*) FROM run_requests`},
		{"weft_gateway", `UPDATE run_snapshots SET status = status`}, // it reads them for bulk jobs, never writes them
		{"weft_gateway", `SELECT payload FROM outbox`},
		{"weft_gateway", `DELETE FROM engine_runs`},
		{"weft_engine", `SELECT count(*) FROM signal_acceptances`},
		{"weft_engine", `SELECT weft_run_delete(gen_random_uuid())`},
		{"weft_engine", `CREATE TABLE intruder (x int)`},
		{"weft_relay", `SELECT count(*) FROM run_events`},
		{"weft_relay", `INSERT INTO outbox (partition, order_key, subject, payload, dedupe_id) VALUES (0, 'k', 's', '', 'd')`},
		{"weft_migrator", `SELECT 1 FROM pg_catalog.pg_authid`},
	} {
		_, err := db.connect(t, c.role).Exec(t.Context(), c.sql)
		var pgErr *pgconn.PgError
		require.ErrorAs(t, err, &pgErr, "%s: %s", c.role, c.sql)
		require.Equal(t, "42501", pgErr.Code, "%s: %s: %v", c.role, c.sql, err) // insufficient_privilege
	}
}

// refusedInNATS checks that a service's user cannot touch the streams or
// read what is not its own.
func refusedInNATS(t *testing.T, n *natsProcess) {
	t.Helper()
	violations := make(chan error, 16)
	nc, err := nats.Connect(n.url("worker"), nats.ErrorHandler(func(_ *nats.Conn, _ *nats.Subscription, err error) {
		violations <- err
	}))
	require.NoError(t, err)
	defer nc.Close()

	_, err = nc.Subscribe("weft.events.>", func(*nats.Msg) {})
	require.NoError(t, err, "refused asynchronously")
	select {
	case err := <-violations:
		require.ErrorIs(t, err, nats.ErrPermissionViolation)
	case <-time.After(step):
		t.Fatal("no permission violation for the worker's subscription to weft.events.>")
	}

	js, err := jetstream.New(nc)
	require.NoError(t, err)
	ctx := t.Context()
	err = js.DeleteStream(ctx, streams.EventsStream)
	require.Error(t, err, "the worker cannot delete a stream")
	require.NotErrorIs(t, err, jetstream.ErrStreamNotFound)
	_, err = js.Stream(ctx, streams.EventsStream)
	require.Error(t, err, "nor read WEFT_EVENTS' info")
}
