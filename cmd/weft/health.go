package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"
)

// healthBodyLimit bounds how much of the answer `weft health` prints.
const healthBodyLimit = 64 << 10

// healthOptions are the flags of `weft health`.
type healthOptions struct {
	url     string
	timeout time.Duration
}

// healthFlags defines the flags of `weft health`; docs/configuration.md
// is generated from them (configdoc_test.go).
func healthFlags(env *environment) (*flags, *healthOptions) {
	f := newFlags("health", env)
	opt := &healthOptions{}
	f.stringVar(&opt.url, "url", "WEFT_HEALTH_URL", "", "the URL to probe, e.g. http://127.0.0.1:9183/readyz (required)")
	f.durationVar(&opt.timeout, "timeout", "WEFT_HEALTH_TIMEOUT", 5*time.Second, "how long to wait for the answer")
	return f, opt
}

// runHealth is `weft health`: it GETs --url, prints the answer's body and
// fails unless the status is 2xx. It is the healthcheck command of the
// container image, which has no shell, curl or wget
// (deploy/compose.yaml).
func runHealth(ctx context.Context, env *environment, args []string) error {
	f, opt := healthFlags(env)
	if err := f.parse(args); err != nil {
		return err
	}
	if opt.url == "" {
		return errors.New("health: set --url or WEFT_HEALTH_URL, e.g. http://127.0.0.1:9183/readyz")
	}
	ctx, cancel := context.WithTimeout(ctx, opt.timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, opt.url, http.NoBody)
	if err != nil {
		return fmt.Errorf("health: %w", err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("health: %w", err)
	}
	defer func() { _ = resp.Body.Close() }()
	if _, err := io.Copy(env.stdout, io.LimitReader(resp.Body, healthBodyLimit)); err != nil {
		return fmt.Errorf("health: read the answer of %s: %w", opt.url, err)
	}
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("health: %s answered %s", opt.url, resp.Status)
	}
	return nil
}
