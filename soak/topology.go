package soak

import (
	"context"
	crand "crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/weftrun/weft/internal/policy/auth"
	"github.com/weftrun/weft/pkg/periodic"
)

// token is the API key of the soak's gateways and projector.
const token = "weft_soak_token"

// rolePassword is the password set on deploy/'s roles, as
// deploy/processes_test.go sets it: the roles belong to the server, and the
// topology test may run at the same time.
const rolePassword = "weft-topology-test"

// natsUsers are deploy/nats.conf's users, and soak, the injector's admin.
var natsUsers = []string{"migrate", "relay", "engine", "worker", "projector", "gateway", "client"}

// topology is the production topology as local processes.
type topology struct {
	dir      string // binaries, logs, the NATS store
	root     string // the module root
	weft     string // the weft binary
	procs    *procs
	dbName   string
	adminURL *url.URL
	admin    *pgxpool.Pool     // the soak's database, as a superuser
	nats     []*natsNode       // one server, or a cluster's nodes
	pg       *pgPair           // a private primary and standby (SOAK_PG_FAILOVER), or nil
	gateways []string          // base URLs of the gateways' APIs
	readURL  string            // the projector's read API
	ops      map[string]string // ops base URL per proc name
}

// buildBinaries builds weft and installs nats-server at go.mod's version.
func buildBinaries(ctx context.Context, t *topology) error {
	t.weft = filepath.Join(t.dir, "weft")
	build := exec.CommandContext(ctx, "go", "build", "-o", t.weft, "./cmd/weft")
	build.Dir = t.root
	if out, err := build.CombinedOutput(); err != nil {
		return fmt.Errorf("go build ./cmd/weft: %w: %s", err, out)
	}
	list := exec.CommandContext(ctx, "go", "list", "-m", "-f", "{{.Version}}", "github.com/nats-io/nats-server/v2")
	list.Dir = t.root
	v, err := list.Output()
	if err != nil {
		return fmt.Errorf("go list nats-server's version: %w", err)
	}
	install := exec.CommandContext(ctx, "go", "install", "github.com/nats-io/nats-server/v2@"+strings.TrimSpace(string(v)))
	install.Dir = t.dir
	install.Env = append(os.Environ(), "GOBIN="+t.dir)
	if out, err := install.CombinedOutput(); err != nil {
		return fmt.Errorf("go install nats-server: %w: %s", err, out)
	}
	return nil
}

// freeAddr returns a loopback address below port 32768 that nothing listens
// on now, drawn from rng.
func freeAddr(ctx context.Context, rng *rand.Rand) (string, error) {
	for range 200 {
		addr := "127.0.0.1:" + strconv.Itoa(20000+rng.IntN(12000))
		l, err := (&net.ListenConfig{}).Listen(ctx, "tcp", addr)
		if err != nil {
			continue
		}
		if err := l.Close(); err != nil {
			return "", fmt.Errorf("free port: %w", err)
		}
		return addr, nil
	}
	return "", errors.New("no free loopback port in 20000-31999 after 200 tries")
}

// createDB creates a fresh database with deploy/postgres/roles.sql applied.
func createDB(ctx context.Context, t *topology, adminURL string) error {
	conn, err := pgx.Connect(ctx, adminURL)
	if err != nil {
		return fmt.Errorf("connect %s: %w", adminURL, err)
	}
	b := make([]byte, 6)
	_, _ = crand.Read(b)
	t.dbName = "weft_soak_" + hex.EncodeToString(b)
	_, err = conn.Exec(ctx, "CREATE DATABASE "+pgx.Identifier{t.dbName}.Sanitize())
	_ = conn.Close(ctx)
	if err != nil {
		return fmt.Errorf("create database: %w", err)
	}
	if t.adminURL, err = url.Parse(adminURL); err != nil {
		return fmt.Errorf("admin URL: %w", err)
	}
	t.adminURL.Path = "/" + t.dbName
	pc, err := pgxpool.ParseConfig(t.adminURL.String())
	if err != nil {
		return fmt.Errorf("admin URL: %w", err)
	}
	pc.ConnConfig.RuntimeParams["search_path"] = "weft" // roles.sql's schema
	if t.admin, err = pgxpool.NewWithConfig(ctx, pc); err != nil {
		return fmt.Errorf("connect the soak database: %w", err)
	}
	roles, err := os.ReadFile(filepath.Join(t.root, "deploy/postgres/roles.sql"))
	if err != nil {
		return fmt.Errorf("roles.sql: %w", err)
	}
	if _, err := t.admin.Exec(ctx, string(roles)); err != nil {
		return fmt.Errorf("roles.sql: %w", err)
	}
	for _, r := range []string{"weft_migrator", "weft_gateway", "weft_engine", "weft_relay", "weft_projector"} {
		if _, err := t.admin.Exec(ctx, "ALTER ROLE "+r+" PASSWORD '"+rolePassword+"'"); err != nil {
			return fmt.Errorf("role %s: %w", r, err)
		}
	}
	return nil
}

// dropDB drops the soak's database.
func dropDB(ctx context.Context, t *topology, adminURL string) error {
	if t.admin != nil {
		t.admin.Close()
	}
	conn, err := pgx.Connect(ctx, adminURL)
	if err != nil {
		return fmt.Errorf("drop %s: %w", t.dbName, err)
	}
	defer func() { _ = conn.Close(ctx) }()
	_, err = conn.Exec(ctx, "DROP DATABASE IF EXISTS "+pgx.Identifier{t.dbName}.Sanitize()+" WITH (FORCE)")
	return err
}

// dbURL returns the database's URL for role.
func (t *topology) dbURL(role string) string {
	u := *t.adminURL
	u.User = url.UserPassword(role, rolePassword)
	return u.String()
}

// waitHTTP polls url until it answers 200, p exits, or bound passes.
func waitHTTP(ctx context.Context, p *proc, url string, bound time.Duration) error {
	hc := &http.Client{Timeout: 2 * time.Second}
	return poll(ctx, bound, func() (bool, error) {
		if p != nil && !p.alive() {
			return false, fmt.Errorf("%s: %w:\n%s", p.name, errExited, p.logTail(4000))
		}
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, http.NoBody)
		if err != nil {
			return false, fmt.Errorf("probe %s: %w", url, err)
		}
		resp, err := hc.Do(req)
		if err != nil {
			return false, nil //nolint:nilerr // nothing answers yet: poll again
		}
		_ = resp.Body.Close()
		return resp.StatusCode == http.StatusOK, nil
	})
}

// poll calls cond every 100 ms until it holds, fails, ctx ends or bound
// passes.
func poll(ctx context.Context, bound time.Duration, cond func() (bool, error)) error {
	deadline := time.Now().Add(bound)
	for {
		ok, err := cond()
		if err != nil || ok {
			return err
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("not within %v", bound)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// migrate runs `weft migrate` as the migrator: schema, grants, streams.
func migrate(ctx context.Context, t *topology) error {
	cmd := exec.CommandContext(ctx, t.weft, "migrate")
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + os.Getenv("HOME"),
		"WEFT_DATABASE_URL=" + t.dbURL("weft_migrator"), "WEFT_NATS_URL=" + t.natsURL("migrate"), t.replicasEnv(),
		"WEFT_GRANTS_FILE=" + filepath.Join(t.root, "deploy/postgres/grants.sql")}
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("weft migrate: %w: %s", err, out)
	}
	return nil
}

// service is one service process to start.
type service struct {
	kind string // the weft subcommand
	n    int
}

// topologyServices is what the soak runs: at least the counts.
var topologyServices = []service{
	{"relay", 1}, {"engine", 2}, {"worker", 2}, {"gateway", 2}, {"projector", 1},
}

// roleOf is each service's Postgres role; the worker has none.
var roleOf = map[string]string{"relay": "weft_relay", "engine": "weft_engine",
	"gateway": "weft_gateway", "projector": "weft_projector"}

// startServices starts every service as its own process with its own role
// and NATS user, none allowed to create streams, and waits for each /readyz.
func startServices(ctx context.Context, t *topology, rng *rand.Rand) error {
	keys := "WEFT_API_KEYS=soak default admin " + auth.HashKey(token)
	t.ops = map[string]string{}
	var started []*proc
	for _, s := range topologyServices {
		for i := 1; i <= s.n; i++ {
			env, err := serviceEnv(ctx, t, s.kind, keys, rng)
			if err != nil {
				return err
			}
			ops, err := freeAddr(ctx, rng)
			if err != nil {
				return err
			}
			name := fmt.Sprintf("%s-%d", s.kind, i)
			env = append(env, "WEFT_"+strings.ToUpper(s.kind)+"_OPS_ADDR="+ops)
			p := t.procs.add(&proc{name: name, kind: s.kind, path: t.weft, args: []string{s.kind}, env: env, dir: t.dir})
			if err := p.start(ctx); err != nil {
				return err
			}
			t.ops[name] = "http://" + ops
			started = append(started, p)
		}
	}
	for _, p := range started {
		if err := waitHTTP(ctx, p, t.ops[p.name]+"/readyz", 2*time.Minute); err != nil {
			return fmt.Errorf("%s ready: %w", p.name, err)
		}
	}
	return nil
}

// soakTaskKey is the engines' task key: base64 of 32 bytes.
const soakTaskKey = "c29hay10YXNrLWtleS1vZi10aGUtZW5naW5lcy0zMmI="

// serviceEnv is the environment of one service process.
func serviceEnv(ctx context.Context, t *topology, kind, keys string, rng *rand.Rand) ([]string, error) {
	env := []string{"PATH=" + os.Getenv("PATH"), "HOME=" + os.Getenv("HOME"),
		"WEFT_NATS_URL=" + t.natsURL(kind), "WEFT_ENSURE_STREAMS=false", t.replicasEnv(), "OTEL_SDK_DISABLED=true"}
	if role, ok := roleOf[kind]; ok {
		env = append(env, "WEFT_DATABASE_URL="+t.dbURL(role))
	}
	switch kind {
	case "engine": // every engine holds the same task key (docs/security.md)
		env = append(env, "WEFT_TASK_KEY="+soakTaskKey)
	case "gateway":
		addr, err := freeAddr(ctx, rng)
		if err != nil {
			return nil, err
		}
		t.gateways = append(t.gateways, "http://"+addr)
		env = append(env, "WEFT_GATEWAY_ADDR="+addr, keys)
	case "projector":
		addr, err := freeAddr(ctx, rng)
		if err != nil {
			return nil, err
		}
		t.readURL = "http://" + addr
		env = append(env, "WEFT_PROJECTOR_ADDR="+addr, "WEFT_GATEWAY_URL="+t.gateways[0], keys)
	}
	return env, nil
}

// restart starts p again and waits until it is ready.
// A process that exits by itself meanwhile (a crash the checker reports)
// is started again, up to restartTries times in all.
func (t *topology) restart(ctx context.Context, p *proc) error {
	var err error
	for range restartTries {
		if err = p.start(ctx); err != nil {
			return err
		}
		if n := t.natsNodeOf(p); n != nil {
			err = n.wait(ctx)
		} else {
			err = waitHTTP(ctx, p, t.ops[p.name]+"/readyz", 2*time.Minute)
		}
		if !errors.Is(err, errExited) {
			return err
		}
		_ = periodic.Sleep(ctx, time.Second)
	}
	return err
}

// restartTries bounds the starts of one restart.
const restartTries = 3
