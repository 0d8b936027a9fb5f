package soak

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// readinessBound bounds the wait for consumers and services to be back.
const readinessBound = time.Minute

// checkConsumers fires when a durable consumer the services keep is still
// missing readinessBound after the runs ended: a deleted consumer must be
// created again by its service.
func checkConsumers(ctx context.Context, top *topology) (checkResult, error) {
	res := checkResult{Name: "every durable consumer present", OK: true}
	nc, err := nats.Connect(top.natsURL("soak"), nats.Name("weft-soak"))
	if err != nil {
		return res, fmt.Errorf("consumers: connect as soak: %w", err)
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		return res, fmt.Errorf("consumers: %w", err)
	}
	var missing []string
	_ = poll(ctx, readinessBound, func() (bool, error) {
		missing = missing[:0]
		for _, c := range consumers {
			if _, err := js.Consumer(ctx, c[0], c[1]); err != nil {
				missing = append(missing, fmt.Sprintf("%s on %s: %v", c[1], c[0], err))
			}
		}
		return len(missing) == 0, nil
	})
	for _, m := range missing {
		res.add("%s", m)
	}
	return res, nil
}

// checkReady fires when a service's /readyz does not answer 200 within
// readinessBound after the runs ended.
func checkReady(ctx context.Context, top *topology) checkResult {
	res := checkResult{Name: "every service ready", OK: true}
	hc := &http.Client{Timeout: 3 * time.Second}
	for _, p := range top.procs.all() {
		url, ok := top.ops[p.name]
		if !ok {
			continue
		}
		status := 0
		_ = poll(ctx, readinessBound, func() (bool, error) {
			status = probe(ctx, hc, url+"/readyz")
			return status == http.StatusOK, nil
		})
		if status != http.StatusOK {
			res.add("%s: /readyz answered %d", p.name, status)
		}
	}
	return res
}

// probe GETs url and returns the status, 0 when nothing answered.
func probe(ctx context.Context, hc *http.Client, url string) int {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, http.NoBody)
	if err != nil {
		return 0
	}
	resp, err := hc.Do(req)
	if err != nil {
		return 0
	}
	_ = resp.Body.Close()
	return resp.StatusCode
}

// checkReadyWhileMissing fires when a service's /readyz answered 200 while
// a consumer it keeps was missing: /readyz must report a missing
// consumer.
func checkReadyWhileMissing(faults []faultRec) checkResult {
	res := checkResult{Name: "/readyz reports a missing consumer", OK: true}
	for _, f := range faults {
		for _, p := range f.ReadyWhileMissing {
			res.add("%s answered 200 while %s was missing (fault at %s)", p, f.Target, f.At.Format("15:04:05.000"))
		}
	}
	return res
}

// checkCrashes fires for every process instance that exited without the
// soak's SIGKILL or SIGTERM, with the end of its log.
func checkCrashes(top *topology) checkResult {
	res := checkResult{Name: "no process exited by itself", OK: true}
	for _, p := range top.procs.all() {
		for _, in := range p.history() {
			if in.exited.IsZero() || in.signalled {
				continue
			}
			res.add("%s.%d exited at %s: %s", p.name, in.n, in.exited.Format("15:04:05.000"), lastLine(in.log))
		}
	}
	return res
}

// lastLine returns the last non-empty line of the file at path, cut to 400
// bytes.
func lastLine(path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return err.Error()
	}
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	l := lines[len(lines)-1]
	if len(l) > 400 {
		l = l[:400] + "…"
	}
	return l
}
