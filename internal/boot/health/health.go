// Package health answers a service's liveness and readiness probes over
// HTTP: /healthz says the process serves, /readyz says its dependencies
// (Postgres, NATS, the JetStream streams it uses, the durable consumers it
// keeps) answer now.
//
// Readiness runs every check at once, each bounded by a short timeout, and
// answers 200 with each check's status, or 503 naming the checks that
// failed. The body is JSON:
//
//	{"status":"ok","checks":[{"name":"postgres","status":"ok"},…]}
//	{"status":"unavailable","failing":["nats"],"checks":[…,{"name":"nats","status":"failing","error":"…"}]}
package health

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/weftrun/weft/internal/boot/httpserve"
)

// DefaultTimeout bounds each readiness check when Probes has no timeout of
// its own.
const DefaultTimeout = 2 * time.Second

// Status values of a Report and of each CheckResult.
const (
	StatusOK          = "ok"
	StatusUnavailable = "unavailable"
	StatusFailing     = "failing"
)

// Check is one dependency a service needs to do its work.
type Check struct {
	// Name identifies the dependency in the report: "postgres", "nats",
	// "stream WEFT_EVENTS".
	Name string
	// Run returns nil when the dependency answers. It must return soon
	// after ctx ends.
	Run func(ctx context.Context) error
}

// CheckResult is the outcome of one check.
type CheckResult struct {
	Name   string `json:"name"`
	Status string `json:"status"`
	Error  string `json:"error,omitempty"`
}

// Report is the answer of /readyz.
type Report struct {
	// Status is StatusOK when every check passed, else StatusUnavailable.
	Status string `json:"status"`
	// Failing names the checks that failed, in check order.
	Failing []string `json:"failing,omitempty"`
	// Checks holds every check's result, in check order.
	Checks []CheckResult `json:"checks"`
}

// Ready reports whether every check passed.
func (r Report) Ready() bool { return r.Status == StatusOK }

// Probes holds a service's readiness checks. It is safe for concurrent use.
type Probes struct {
	checks  []Check
	timeout time.Duration
}

// New returns the probes of checks, each run with timeout (zero means
// DefaultTimeout). A check without a name or a function is an error.
func New(timeout time.Duration, checks ...Check) (*Probes, error) {
	for i, c := range checks {
		if c.Name == "" || c.Run == nil {
			return nil, fmt.Errorf("health: check %d needs a name and a function", i)
		}
	}
	return &Probes{checks: checks, timeout: cmp.Or(timeout, DefaultTimeout)}, nil
}

// Check runs every check concurrently, each bounded by the probes' timeout
// and by ctx, and returns the report.
func (p *Probes) Check(ctx context.Context) Report {
	results := make([]CheckResult, len(p.checks))
	var wg sync.WaitGroup
	for i, c := range p.checks {
		wg.Go(func() { results[i] = p.run(ctx, c) })
	}
	wg.Wait()
	report := Report{Status: StatusOK, Checks: results}
	for _, r := range results {
		if r.Status != StatusOK {
			report.Status = StatusUnavailable
			report.Failing = append(report.Failing, r.Name)
		}
	}
	return report
}

func (p *Probes) run(ctx context.Context, c Check) CheckResult {
	ctx, cancel := context.WithTimeout(ctx, p.timeout)
	defer cancel()
	err := c.Run(ctx)
	if err == nil {
		return CheckResult{Name: c.Name, Status: StatusOK}
	}
	if errors.Is(err, context.DeadlineExceeded) {
		err = fmt.Errorf("no answer within %v: %w", p.timeout, err)
	}
	return CheckResult{Name: c.Name, Status: StatusFailing, Error: err.Error()}
}

// Healthz answers 200 {"status":"ok"} for as long as the process serves:
// it checks nothing else.
func (p *Probes) Healthz(w http.ResponseWriter, _ *http.Request) {
	httpserve.WriteJSON(w, http.StatusOK, map[string]string{"status": StatusOK})
}

// Readyz runs the checks and answers 200 with the report when every one
// passed, else 503 with the report naming the failing ones.
func (p *Probes) Readyz(w http.ResponseWriter, r *http.Request) {
	report := p.Check(r.Context())
	status := http.StatusOK
	if !report.Ready() {
		status = http.StatusServiceUnavailable
	}
	w.Header().Set("Cache-Control", "no-store")
	httpserve.WriteJSON(w, status, report)
}

// Register serves Healthz at GET /healthz and Readyz at GET /readyz on mux.
func (p *Probes) Register(mux *http.ServeMux) {
	mux.HandleFunc("GET /healthz", p.Healthz)
	mux.HandleFunc("GET /readyz", p.Readyz)
}
