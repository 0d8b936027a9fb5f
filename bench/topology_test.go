package bench

import (
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/weftrun/weft/internal/policy/auth"
	"github.com/weftrun/weft/pkg/client"
	"github.com/weftrun/weft/pkg/weftest"
)

// BenchmarkSystemTopology is the second headline: BenchmarkSystem's loads
// and figures on the compose topology as processes (deploy/compose.yaml,
// the soak's topology without its faults): a nats-server process on
// deploy/nats.conf, each service a `weft <service>` process of its own
// with its own NATS user (relay, engine, worker, gateway, projector: one
// of each, as compose runs them), all over TCP, on a database of the
// shared Postgres. It is what a production user runs, where
// BenchmarkSystem is `weft dev`, every service in one process.
//
// The services connect to Postgres as its superuser, where compose gives
// each its own role: the roles' grants change what a service may do, not
// what it costs. After the loads it logs each process's share of the CPU
// they spent.
func BenchmarkSystemTopology(b *testing.B) {
	s, procs := startTopology(b)
	before, machine := procsCPU(procs), machineCPU(b)
	systemLoads(b, s)
	after, total := procsCPU(procs), machineCPU(b)-machine
	lines := make([]string, len(procs))
	for i, p := range procs {
		lines[i] = fmt.Sprintf("%s %.1f %%", p.name, 100*float64(after[i]-before[i])/float64(total))
	}
	fmt.Printf("    topology: each process's share of the machine's CPU over the loads (%.1f s, the load generator's excluded): %s\n",
		total.Seconds(), strings.Join(lines, ", "))
}

// procsCPU is each process's CPU time so far.
func procsCPU(procs []*benchProc) []time.Duration {
	out := make([]time.Duration, len(procs))
	for i, p := range procs {
		out[i] = procCPU(p.cmd.Process.Pid)
	}
	return out
}

// topologyToken is the API key of the topology's gateway and projector.
const topologyToken = "weft_bench_topology_token"

// topologyTaskKey is the engine's task key: base64 of 32 bytes.
const topologyTaskKey = "d2VmdC1iZW5jaC10b3BvbG9neS10YXNrLWtleS0zMmI="

// natsUsers are deploy/nats.conf's users.
var natsUsers = []string{"migrate", "relay", "engine", "worker", "projector", "gateway", "client"}

// natsServerBinary builds the nats-server of go.mod's nats-server/v2 (the
// module weft dev embeds) once per process.
var natsServerBinary = buildOnce("github.com/nats-io/nats-server/v2", "nats-server")

// startTopology starts nats-server, runs `weft migrate` (the streams; the
// schema is the test database's already) and starts the services, each
// ready, on a fresh database of the shared server; every process is
// stopped, in reverse start order, when b ends. The devStack it returns
// reaches the gateway's API, the projector's read API and metrics, the
// log and the bus (as an admin user added to the NATS configuration); the
// processes are nats-server's and the services'.
func startTopology(b *testing.B) (*devStack, []*benchProc) {
	b.Helper()
	weft, err := weftBinary()
	if err != nil {
		b.Fatal(err)
	}
	db := weftest.NewDB(b)
	dir := b.TempDir()
	addr := func() string { return "127.0.0.1:" + strconv.Itoa(weftest.FreePort(b)) }
	natsProc, natsAddr := startNATSServer(b, dir, addr(), addr())
	natsURL := func(user string) string { return "nats://" + user + ":pw-" + user + "@" + natsAddr }
	base := []string{"PATH=" + os.Getenv("PATH"), "HOME=" + os.Getenv("HOME"), "WEFT_LOG_LEVEL=warn", "OTEL_SDK_DISABLED=true"}
	migrate := exec.Command(weft, "migrate")
	migrate.Env = slices.Concat(base, []string{"WEFT_DATABASE_URL=" + db.URL, "WEFT_NATS_URL=" + natsURL("migrate")})
	if out, err := migrate.CombinedOutput(); err != nil {
		b.Fatalf("weft migrate: %v\n%s", err, out)
	}
	keys := "WEFT_API_KEYS=bench default admin " + auth.HashKey(topologyToken)
	gateway, read := "http://"+addr(), "http://"+addr()
	extra := map[string][]string{
		"relay":  nil,
		"engine": {"WEFT_TASK_KEY=" + topologyTaskKey},
		"worker": nil,
		"gateway": {"WEFT_GATEWAY_ADDR=" + strings.TrimPrefix(gateway, "http://"), keys,
			"WEFT_GATEWAY_KEY_RATE=-1"}, // the default 100 requests/s would be the figure
		"projector": {"WEFT_PROJECTOR_ADDR=" + strings.TrimPrefix(read, "http://"), "WEFT_GATEWAY_URL=" + gateway, keys,
			"WEFT_PROJECTOR_KEY_RATE=-1"},
	}
	ops := map[string]string{}
	var started []*benchProc
	for _, svc := range []string{"relay", "engine", "worker", "gateway", "projector"} {
		ops[svc] = addr()
		env := slices.Concat(base, []string{"WEFT_NATS_URL=" + natsURL(svc), "WEFT_ENSURE_STREAMS=false",
			"WEFT_" + strings.ToUpper(svc) + "_OPS_ADDR=" + ops[svc]}, extra[svc])
		if svc != "worker" { // the worker needs NATS only
			env = append(env, "WEFT_DATABASE_URL="+db.URL)
		}
		started = append(started, startProc(b, dir, svc, weft, []string{svc}, env))
	}
	for _, p := range started {
		p.waitReady(b, "http://"+ops[p.name]+"/readyz")
	}
	return connectTopology(b, db, natsURL("bench"), gateway, read, "http://"+ops["projector"]), append([]*benchProc{natsProc}, started...)
}

// startNATSServer starts nats-server on deploy/nats.conf (its store in
// dir, an admin user "bench" added), listening on addr with its monitoring
// on mon, waits until it is healthy, and returns it and addr.
func startNATSServer(b *testing.B, dir, addr, mon string) (*benchProc, string) {
	bin, err := natsServerBinary()
	if err != nil {
		b.Fatal(err)
	}
	conf, err := os.ReadFile("../deploy/nats.conf")
	if err != nil {
		b.Fatal(err)
	}
	s := string(conf)
	for _, want := range []string{"store_dir: /data", "users: ["} {
		if strings.Count(s, want) != 1 {
			b.Fatalf("deploy/nats.conf: expected one %q", want)
		}
	}
	s = strings.Replace(s, "store_dir: /data", "store_dir: "+strconv.Quote(filepath.Join(dir, "nats-store")), 1)
	s = strings.Replace(s, "users: [", "users: [\n      { user: bench, password: pw-bench }", 1)
	path := filepath.Join(dir, "nats.conf")
	if err := os.WriteFile(path, []byte(s), 0o600); err != nil {
		b.Fatal(err)
	}
	env := []string{"PATH=" + os.Getenv("PATH"), "HOME=" + os.Getenv("HOME")}
	for _, u := range natsUsers {
		env = append(env, "WEFT_NATS_"+strings.ToUpper(u)+"_PASSWORD=pw-"+u)
	}
	host, port, _ := strings.Cut(addr, ":")
	_, mport, _ := strings.Cut(mon, ":")
	p := startProc(b, dir, "nats-server", bin, []string{"-c", path, "-a", host, "-p", port, "-m", mport}, env)
	p.waitReady(b, "http://"+mon+"/healthz")
	return p, addr
}

// connectTopology makes the clients the benchmark reaches the topology
// with: ops is the projector's, whose metrics hold the projection lag.
func connectTopology(b *testing.B, db *weftest.DB, natsURL, gateway, read, ops string) *devStack {
	c, err := client.New(gateway, client.WithToken(topologyToken), client.WithReadURL(read), client.WithHTTPClient(loadHTTPClient()))
	if err != nil {
		b.Fatal(err)
	}
	nc, err := nats.Connect(natsURL)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	if err != nil {
		b.Fatal(err)
	}
	return &devStack{db: db, client: c, hc: &http.Client{Timeout: time.Minute}, js: js, ops: ops, gateway: gateway, read: read}
}

// benchProc is one process of the topology.
type benchProc struct {
	name   string
	cmd    *exec.Cmd
	exited chan struct{}
	log    string
}

// startProc starts path with args and env, its output in dir/<name>.log;
// it is stopped when b ends: SIGTERM, then SIGKILL after a minute.
func startProc(b *testing.B, dir, name, path string, args, env []string) *benchProc {
	p := &benchProc{name: name, exited: make(chan struct{}), log: filepath.Join(dir, name+".log")}
	out, err := os.Create(p.log)
	if err != nil {
		b.Fatal(err)
	}
	p.cmd = exec.Command(path, args...)
	p.cmd.Env, p.cmd.Stdout, p.cmd.Stderr = env, out, out
	if err := p.cmd.Start(); err != nil {
		_ = out.Close()
		b.Fatal(err)
	}
	go func() { _ = p.cmd.Wait(); _ = out.Close(); close(p.exited) }()
	b.Cleanup(func() { p.stop(b) })
	return p
}

// stop ends p by its PID: SIGTERM, then SIGKILL after a minute.
func (p *benchProc) stop(b *testing.B) {
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.exited:
	case <-time.After(time.Minute):
		_ = p.cmd.Process.Kill()
		<-p.exited
		b.Errorf("%s did not stop within a minute of SIGTERM:\n%s", p.name, p.logTail())
	}
}

// waitReady waits until url answers 200; it fails b when p exits first or
// two minutes pass.
func (p *benchProc) waitReady(b *testing.B, url string) {
	hc := &http.Client{Timeout: 2 * time.Second}
	deadline := time.Now().Add(2 * time.Minute)
	for {
		select {
		case <-p.exited:
			b.Fatalf("%s exited before it was ready:\n%s", p.name, p.logTail())
		case <-time.After(100 * time.Millisecond):
		}
		if resp, err := hc.Get(url); err == nil {
			_ = resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return
			}
		}
		if time.Now().After(deadline) {
			b.Fatalf("%s: not ready within 2 minutes\n%s", p.name, p.logTail())
		}
	}
}

// logTail is the last 4,000 bytes of p's log.
func (p *benchProc) logTail() string {
	raw, err := os.ReadFile(p.log)
	if err != nil {
		return err.Error()
	}
	return string(raw[max(0, len(raw)-4000):])
}
