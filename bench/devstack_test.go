package bench

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/weftrun/weft/internal/boot/httpserve"
	"github.com/weftrun/weft/pkg/client"
	"github.com/weftrun/weft/pkg/weftest"
)

// devToken is the API token of the benchmarks' `weft dev` stacks.
const devToken = "weft_bench_token"

// devStack is `weft dev` as a user starts it: the weft binary in a process
// of its own, every service on its embedded defaults (gateway, relay,
// engine, worker, projector with the UI's read API, embedded NATS), on a
// database of its own. The benchmark reaches it only as a user does:
// through the gateway's HTTP API (client), the read API, and, for its
// figures, the log in Postgres, the bus's stream counters and /metrics.
type devStack struct {
	db     *weftest.DB
	cmd    *exec.Cmd
	client *client.Client
	hc     *http.Client
	js     jetstream.JetStream
	// ops is the base URL of the stack's /metrics (and, with WEFT_PPROF,
	// /debug/pprof/); client reaches the read API.
	ops string
	// gateway and read are the base URLs of the gateway's HTTP API and of
	// the read API, for the requests client has no method for, or whose
	// answer the benchmark reads raw.
	gateway, read string
}

// devEndpoints is what the stack's endpoints.json says (cmd/weft's
// devfile.Endpoints: its JSON names are a contract, docs/cli.md).
type devEndpoints struct {
	Gateway          string `json:"gateway"`
	ReadAPI          string `json:"readApi"`
	NATS             string `json:"nats"`
	NATSUser         string `json:"natsUser"`
	NATSPasswordFile string `json:"natsPasswordFile"`
	Ops              string `json:"ops"`
}

// weftBinary builds ./cmd/weft once per process.
var weftBinary = buildOnce("./cmd/weft", "weft")

// buildOnce returns a function that builds pkg, a package of the
// repository's module or of one it requires, into a binary named name in a
// temporary folder, once per process, and returns its path.
func buildOnce(pkg, name string) func() (string, error) {
	return sync.OnceValues(func() (string, error) {
		dir, err := os.MkdirTemp("", "weft-bench-"+name+"-")
		if err != nil {
			return "", err
		}
		bin := filepath.Join(dir, name)
		build := exec.Command("go", "build", "-o", bin, pkg)
		build.Dir = ".."
		if out, err := build.CombinedOutput(); err != nil {
			return "", fmt.Errorf("go build %s: %w: %s", pkg, err, out)
		}
		return bin, nil
	})
}

// startDevStack starts `weft dev` on db (a fresh database of the shared
// server when nil) and waits until it is ready; it is stopped with SIGINT,
// as Ctrl-C stops it, when b ends.
func startDevStack(b *testing.B, db *weftest.DB) *devStack {
	b.Helper()
	bin, err := weftBinary()
	if err != nil {
		b.Fatal(err)
	}
	if db == nil {
		db = weftest.NewDB(b)
	}
	dir := b.TempDir()
	port := func() string { return "127.0.0.1:" + strconv.Itoa(weftest.FreePort(b)) }
	cmd := exec.Command(bin, "dev", "--dir", filepath.Join(dir, "dev"), "--demo=false",
		"--nats-port", strconv.Itoa(weftest.FreePort(b)),
		"--gateway-addr", port(), "--ui-addr", port(), "--ops-addr", port(),
		"--key-rate=-1") // the dev key's 100 requests/s would be the figure
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + os.Getenv("HOME"),
		"WEFT_DATABASE_URL=" + db.URL, "WEFT_DEV_TOKEN=" + devToken, "WEFT_LOG_LEVEL=warn", "WEFT_PPROF=true"}
	logPath := filepath.Join(dir, "weft-dev.log")
	logFile, err := os.Create(logPath)
	if err != nil {
		b.Fatal(err)
	}
	cmd.Stdout, cmd.Stderr = logFile, logFile
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); _ = logFile.Close(); close(exited) }()
	b.Cleanup(func() { stopDevStack(b, cmd, exited, logPath) })
	ep, err := waitDevReady(filepath.Join(dir, "dev"), exited)
	if err != nil {
		log, _ := os.ReadFile(logPath)
		b.Fatalf("weft dev: %v\n%s", err, log)
	}
	return connectDevStack(b, db, cmd, ep)
}

// stopDevStack interrupts the stack and waits for it to stop.
func stopDevStack(b *testing.B, cmd *exec.Cmd, exited chan struct{}, logPath string) {
	_ = cmd.Process.Signal(syscall.SIGINT)
	select {
	case <-exited:
	case <-time.After(time.Minute):
		_ = cmd.Process.Kill()
		<-exited
		log, _ := os.ReadFile(logPath)
		b.Errorf("weft dev did not stop within a minute of SIGINT:\n%s", log)
	}
}

// waitDevReady waits until the stack in dir has written its endpoints and
// its /readyz answers 200.
func waitDevReady(dir string, exited chan struct{}) (devEndpoints, error) {
	var ep devEndpoints
	deadline := time.Now().Add(2 * time.Minute)
	for time.Now().Before(deadline) {
		select {
		case <-exited:
			return ep, errors.New("exited before it was ready")
		case <-time.After(100 * time.Millisecond):
		}
		raw, err := os.ReadFile(filepath.Join(dir, "endpoints.json"))
		if err != nil || json.Unmarshal(raw, &ep) != nil || ep.Ops == "" {
			continue
		}
		resp, err := http.Get(ep.Ops + "/readyz")
		if err != nil {
			continue
		}
		_ = resp.Body.Close()
		if resp.StatusCode == http.StatusOK {
			return ep, nil
		}
	}
	return ep, errors.New("not ready within 2 minutes")
}

// connectDevStack makes the clients the benchmark reaches the stack with.
func connectDevStack(b *testing.B, db *weftest.DB, cmd *exec.Cmd, ep devEndpoints) *devStack {
	hc := &http.Client{Timeout: time.Minute}
	c, err := client.New(ep.Gateway, client.WithToken(devToken), client.WithReadURL(ep.ReadAPI), client.WithHTTPClient(loadHTTPClient()))
	if err != nil {
		b.Fatal(err)
	}
	password, err := os.ReadFile(ep.NATSPasswordFile)
	if err != nil {
		b.Fatal(err)
	}
	nc, err := nats.Connect(ep.NATS, nats.UserInfo(ep.NATSUser, strings.TrimSpace(string(password))))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	if err != nil {
		b.Fatal(err)
	}
	return &devStack{db: db, cmd: cmd, client: c, hc: hc, js: js, ops: ep.Ops, gateway: ep.Gateway, read: ep.ReadAPI}
}

// loadHTTPClient is the HTTP client the benchmarks start runs with: one
// client host, so it opens at most the connections a gateway takes from
// one address (httpserve.DefaultMaxConnsPerAddr; past them it answers 503)
// and a start past them waits for one, the wait counted in its answer's
// time.
func loadHTTPClient() *http.Client {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.MaxConnsPerHost, tr.MaxIdleConnsPerHost = httpserve.DefaultMaxConnsPerAddr, httpserve.DefaultMaxConnsPerAddr
	return &http.Client{Timeout: client.DefaultAttemptTimeout, Transport: tr}
}

// waitEnded waits until n runs have ended (completed, failed or
// cancelled) at or after since, or bound passes. It counts through the log's
// (event_type, persisted_at) index: its cost follows the load, not the
// runs parked beside it.
func (s *devStack) waitEnded(ctx context.Context, since time.Time, n int, bound time.Duration) error {
	deadline := time.Now().Add(bound)
	for {
		var ended int
		err := s.db.Pool.QueryRow(ctx, `/* bench */ SELECT count(*) FROM run_events
			WHERE event_type IN ('RunCompleted', 'RunFailed', 'RunCancelled') AND persisted_at >= $1`, since).Scan(&ended)
		if err != nil {
			return err
		}
		if ended >= n {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%d of %d runs unfinished after %v", n-ended, n, bound)
		}
		// The figures' clocks are read from the log, not from this loop.
		time.Sleep(250 * time.Millisecond)
	}
}

// waitQuiet waits until the stack has nothing left to carry: the outbox
// is empty and every consumer of every stream has been delivered, and has
// acked, all it will be. A load measured right after another one (parking
// runs) would otherwise share the machine with the first one's tail: the
// relay's backlog, the projector's.
func (s *devStack) waitQuiet(ctx context.Context, bound time.Duration) error {
	deadline := time.Now().Add(bound)
	for {
		busy, err := s.busy(ctx)
		if err != nil || busy == "" {
			return err
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("not quiet after %v: %s", bound, busy)
		}
		time.Sleep(250 * time.Millisecond)
	}
}

// busy says what the stack still carries, or "" when nothing.
func (s *devStack) busy(ctx context.Context) (string, error) {
	var outbox bool
	if err := s.db.Pool.QueryRow(ctx, `/* bench */ SELECT EXISTS (SELECT 1 FROM outbox)`).Scan(&outbox); err != nil {
		return "", err
	}
	if outbox {
		return "the outbox holds rows", nil
	}
	streams := s.js.ListStreams(ctx)
	for st := range streams.Info() {
		stream, err := s.js.Stream(ctx, st.Config.Name)
		if err != nil {
			return "", err
		}
		consumers := stream.ListConsumers(ctx)
		for c := range consumers.Info() {
			if c.NumPending > 0 || c.NumAckPending > 0 {
				return fmt.Sprintf("consumer %s of %s: %d pending, %d unacked", c.Name, st.Config.Name, c.NumPending, c.NumAckPending), nil
			}
		}
		if err := consumers.Err(); err != nil {
			return "", err
		}
	}
	return "", streams.Err()
}

// promHistogram is one scrape of a Prometheus histogram: cumulative
// counts per upper bound, +Inf last, summed over its label sets.
type promHistogram struct {
	bounds []float64
	cum    []uint64
}

// lagHistogram scrapes the stack's weft_projector_lag_seconds.
func (s *devStack) lagHistogram(b *testing.B) promHistogram {
	b.Helper()
	resp, err := s.hc.Get(s.ops + "/metrics")
	if err != nil {
		b.Fatal(err)
	}
	defer func() { _ = resp.Body.Close() }()
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(resp.Body)
	if err != nil {
		b.Fatal(err)
	}
	var h promHistogram
	f, ok := families["weft_projector_lag_seconds"]
	if !ok {
		return h // nothing projected yet
	}
	for _, m := range f.GetMetric() {
		for i, bk := range m.GetHistogram().GetBucket() {
			if len(h.bounds) <= i {
				h.bounds = append(h.bounds, bk.GetUpperBound())
				h.cum = append(h.cum, 0)
			}
			h.cum[i] += bk.GetCumulativeCount()
		}
		if len(h.bounds) == len(m.GetHistogram().GetBucket()) {
			h.bounds = append(h.bounds, math.Inf(1))
			h.cum = append(h.cum, 0)
		}
		h.cum[len(h.cum)-1] += m.GetHistogram().GetSampleCount()
	}
	return h
}

// minus returns what was recorded between an earlier scrape and h, as a
// histogram whose percentiles interpolate inside buckets from 0 to the
// last finite bound.
func (h promHistogram) minus(earlier promHistogram) histogram {
	out := histogram{bounds: h.bounds[:max(len(h.bounds)-1, 0)], counts: make([]uint64, len(h.cum))}
	var prev uint64
	for i, c := range h.cum {
		if i < len(earlier.cum) {
			c -= earlier.cum[i]
		}
		out.counts[i] = c - prev
		prev = c
	}
	out.count = prev
	if len(out.bounds) > 0 {
		out.max = out.bounds[len(out.bounds)-1]
	}
	return out
}
