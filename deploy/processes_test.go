package deploy

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/weftrun/weft/pkg/weftest"
)

// TestMain stops a private Postgres the harness may have started and
// checks for leaked goroutines.
func TestMain(m *testing.M) { weftest.Main(m) }

// step bounds each wait of the topology tests: a process coming up, a run
// moving on. Generous, for a loaded machine; a failure still comes well
// before the test binary's timeout.
const step = 2 * time.Minute

// process is one OS process of the topology.
type process struct {
	name string
	cmd  *exec.Cmd
	out  *weftest.Buffer
	done chan struct{}
	err  error // set before done closes
}

// startProcess starts path with args and env (and nothing of the test's
// own environment but PATH and HOME). The test's cleanup stops it:
// SIGTERM, then SIGKILL if it has not exited within step. On failure its
// output is logged.
func startProcess(t *testing.T, name, path string, args []string, env ...string) *process {
	t.Helper()
	p := &process{name: name, out: &weftest.Buffer{}, done: make(chan struct{})}
	p.cmd = exec.Command(path, args...) // stopped by a signal in the cleanup, not by a context
	p.cmd.Env = append([]string{"PATH=" + os.Getenv("PATH"), "HOME=" + os.Getenv("HOME")}, env...)
	p.cmd.Stdout, p.cmd.Stderr = p.out, p.out
	require.NoError(t, p.cmd.Start(), name)
	go func() { p.err = p.cmd.Wait(); close(p.done) }()
	t.Cleanup(func() {
		p.stop(t)
		if t.Failed() {
			t.Logf("--- %s (exit: %v) ---\n%s", name, p.err, tail(p.out.String(), 6000))
		}
	})
	return p
}

// stop asks the process to stop and waits for it.
func (p *process) stop(t *testing.T) {
	select {
	case <-p.done:
		return
	default:
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM) // it may have exited meanwhile
	select {
	case <-p.done:
	case <-time.After(step):
		t.Errorf("%s did not stop within %v of SIGTERM: killed", p.name, step)
		_ = p.cmd.Process.Kill()
		<-p.done
	}
}

// exited reports whether the process has exited.
func (p *process) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// wait waits for the process to exit by itself and returns its error.
func (p *process) wait(t *testing.T) error {
	t.Helper()
	select {
	case <-p.done:
		return p.err
	case <-time.After(step):
		t.Fatalf("%s did not exit within %v:\n%s", p.name, step, tail(p.out.String(), 6000))
		return nil
	}
}

func tail(s string, n int) string {
	if len(s) > n {
		return "…" + s[len(s)-n:]
	}
	return s
}

// freeAddr returns a loopback address nothing listens on now, never one
// it returned before (weftest.FreePort).
func freeAddr(t *testing.T) string {
	t.Helper()
	return fmt.Sprintf("127.0.0.1:%d", weftest.FreePort(t))
}

// rolesDB is a fresh, empty database with Weft's roles (roles.sql).
type rolesDB struct {
	name     string
	adminURL *url.URL
	admin    *pgxpool.Pool
}

// newRolesDB creates an empty database, applies postgres/roles.sql to it
// as a superuser, and drops it when the test ends. The roles themselves
// belong to the server and stay (the script is idempotent).
func newRolesDB(t *testing.T) *rolesDB {
	t.Helper()
	ctx := t.Context()
	admin := weftest.AdminURL(t)
	conn, err := pgx.Connect(ctx, admin)
	require.NoError(t, err)
	name := "weft_topology_" + randomHex(t, 6)
	_, err = conn.Exec(ctx, "CREATE DATABASE "+pgx.Identifier{name}.Sanitize())
	require.NoError(t, err)
	require.NoError(t, conn.Close(ctx))
	t.Cleanup(func() { dropDatabase(t, admin, name) })

	u, err := url.Parse(admin)
	require.NoError(t, err)
	u.Path = "/" + name
	pool, err := pgxpool.New(ctx, u.String())
	require.NoError(t, err)
	t.Cleanup(pool.Close)
	roles, err := os.ReadFile("postgres/roles.sql")
	require.NoError(t, err)
	_, err = pool.Exec(ctx, string(roles))
	require.NoError(t, err, "roles.sql")
	// As 20-weft-passwords.sh does, for a server that asks for passwords.
	for _, r := range []string{"weft_migrator", "weft_gateway", "weft_engine", "weft_relay", "weft_projector"} {
		_, err = pool.Exec(ctx, "ALTER ROLE "+r+" PASSWORD 'weft-topology-test'")
		require.NoError(t, err)
	}
	return &rolesDB{name: name, adminURL: u, admin: pool}
}

// url returns the database's URL for role.
func (d *rolesDB) url(role string) string {
	u := *d.adminURL
	u.User = url.UserPassword(role, "weft-topology-test")
	return u.String()
}

// connect opens a connection as role, closed when the test ends.
func (d *rolesDB) connect(t *testing.T, role string) *pgx.Conn {
	t.Helper()
	conn, err := pgx.Connect(t.Context(), d.url(role))
	require.NoError(t, err, role)
	t.Cleanup(func() { _ = conn.Close(context.Background()) })
	return conn
}

func dropDatabase(t *testing.T, admin, name string) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	conn, err := pgx.Connect(ctx, admin)
	if err != nil {
		t.Errorf("drop %s: %v", name, err)
		return
	}
	defer func() { _ = conn.Close(ctx) }()
	if _, err := conn.Exec(ctx, "DROP DATABASE IF EXISTS "+pgx.Identifier{name}.Sanitize()+" WITH (FORCE)"); err != nil {
		t.Errorf("drop %s: %v", name, err)
	}
}

func randomHex(t *testing.T, n int) string {
	b := make([]byte, n)
	_, err := rand.Read(b)
	require.NoError(t, err)
	return hex.EncodeToString(b)
}

// natsProcess is a nats-server process run from deploy/nats.conf.
type natsProcess struct {
	*process
	addr string // host:port of clients
}

// startNATSServer runs nats-server with deploy/nats.conf, on free ports
// and a store of its own, through nats-entrypoint.sh, as the nats
// container does: each user's password comes from the file in
// secretsDir/nats that `weft secrets init` wrote ("pw-<user>",
// topologySecrets). It waits until JetStream is up.
func startNATSServer(t *testing.T, bin, secretsDir string) *natsProcess {
	t.Helper()
	addr, monitor := freeAddr(t), freeAddr(t)
	_, port, _ := net.SplitHostPort(addr)
	_, mport, _ := net.SplitHostPort(monitor)
	// bin is found on PATH, as in the image; the last PATH of env wins.
	env := []string{"WEFT_SECRETS_DIR=" + filepath.Join(secretsDir, "nats"),
		"PATH=" + filepath.Dir(bin) + string(os.PathListSeparator) + os.Getenv("PATH")}
	// nats-server refuses -sd beside the file's store_dir: the test's copy
	// of the file has its own.
	conf, err := os.ReadFile("nats.conf")
	require.NoError(t, err)
	require.Equal(t, 1, strings.Count(string(conf), "store_dir: /data"))
	storeDir := t.TempDir()
	confPath := filepath.Join(storeDir, "nats.conf")
	require.NoError(t, os.WriteFile(confPath, []byte(strings.Replace(string(conf), "store_dir: /data", "store_dir: "+strconv.Quote(storeDir), 1)), 0o600))
	p := startProcess(t, "nats-server", "/bin/sh", []string{"nats-entrypoint.sh", "-c", confPath, "-a", "127.0.0.1", "-p", port, "-m", mport}, env...)
	waitFor(t, p, "nats-server's JetStream", func() bool {
		status, _ := httpGet(t, "http://"+monitor+"/healthz?js-enabled-only=true", "")
		return status == http.StatusOK
	})
	return &natsProcess{process: p, addr: addr}
}

// url returns the server's URL for user.
func (n *natsProcess) url(user string) string {
	return "nats://" + user + ":pw-" + user + "@" + n.addr
}

// waitFor polls cond until it holds, failing the test after step or when
// p exits first.
func waitFor(t *testing.T, p *process, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(step)
	for !cond() {
		if p != nil && p.exited() {
			t.Fatalf("%s exited (%v) before %s:\n%s", p.name, p.err, what, tail(p.out.String(), 6000))
		}
		if time.Now().After(deadline) {
			t.Fatalf("no %s within %v", what, step)
		}
		select {
		case <-t.Context().Done():
			t.Fatal(t.Context().Err())
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// httpGet answers a GET of url with token as its bearer token (none when
// empty): the status, 0 when nothing answers, and the body.
func httpGet(t *testing.T, url, token string) (int, []byte) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, url, http.NoBody)
	require.NoError(t, err)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, nil
	}
	defer func() { _ = resp.Body.Close() }()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return 0, nil
	}
	return resp.StatusCode, body
}
