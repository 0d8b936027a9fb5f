package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
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
	f.stringVar(&opt.url, "url", "WEFT_HEALTH_URL", "", "the URL to probe, e.g. http://127.0.0.1:9183/readyz; also given as the one argument; without a path, /readyz")
	f.durationVar(&opt.timeout, "timeout", "WEFT_HEALTH_TIMEOUT", 5*time.Second, "how long to wait for the answer")
	return f, opt
}

// runHealth is `weft health [URL]`: it GETs the URL (the argument, else
// --url), its path /readyz when it has none, prints the answer's body and
// fails unless the status is 2xx. It is the healthcheck command of the
// container image, which has no shell, curl or wget
// (deploy/compose.yaml).
func runHealth(ctx context.Context, env *environment, args []string) error {
	f, opt := healthFlags(env)
	operands, err := f.parseOperands(args, 1)
	if err != nil {
		return err
	}
	if len(operands) == 1 {
		opt.url = operands[0]
	}
	if opt.url == "" {
		return errors.New("health: give the URL to probe, as the argument, --url or WEFT_HEALTH_URL, e.g. http://127.0.0.1:9183/readyz")
	}
	if opt.url, err = probeURL(opt.url); err != nil {
		return err
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

// probeURL is raw with the path /readyz when it has none: a service's ops
// address alone asks whether it is ready.
func probeURL(raw string) (string, error) {
	u, err := url.Parse(raw)
	if err != nil || u.Scheme == "" || u.Host == "" {
		return "", fmt.Errorf("health: %q is not a URL such as http://127.0.0.1:9183/readyz", raw)
	}
	if u.Path == "" || u.Path == "/" {
		u.Path = "/readyz"
	}
	return u.String(), nil
}
