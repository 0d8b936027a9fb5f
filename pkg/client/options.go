package client

import (
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// Defaults of a Client built without the matching option.
const (
	// DefaultUserAgent is the User-Agent header sent without WithUserAgent.
	DefaultUserAgent = "weft-go-client"
	// DefaultAttemptTimeout is the Timeout of the *http.Client used without
	// WithHTTPClient: the limit of one attempt, response body included.
	DefaultAttemptTimeout = 30 * time.Second
	// DefaultPollTimeout is how long one long-poll request of WaitRun asks
	// the read API to hold it, without WithPollTimeout. It is below
	// DefaultAttemptTimeout, so a poll that runs its course is not cut off
	// as a failed attempt.
	DefaultPollTimeout = 20 * time.Second
)

// Option configures a Client in New. An option given a bad value makes New
// fail with an error wrapping ErrInvalidConfig; options apply in order, so
// a later one of the same kind wins.
type Option func(*Client) error

// WithToken sets the API key sent as "Authorization: Bearer <token>" on
// every request. Without it no Authorization header is sent (and the
// gateway answers 401). token must not be empty or hold control
// characters.
func WithToken(token string) Option {
	return func(c *Client) error {
		if err := checkHeaderValue("WithToken", token); err != nil {
			return err
		}
		c.token = token
		return nil
	}
}

// WithReadURL sets the base URL of the read API (docs/read-api.md), which
// the projector serves on its own listener, apart from the gateway that
// New's base URL names: "http://127.0.0.1:8081" under `weft dev`. It has
// the form of New's base URL. Without it, the read calls (GetRun, WaitRun,
// ListRuns, Runs, RunEvents, Step, StepChildren) fail with ErrNoReadURL. Where one address serves both (a
// proxy routing GET /v1/runs… to the projector and the rest to the
// gateway), pass that address to both.
func WithReadURL(readURL string) Option {
	return func(c *Client) error {
		u, err := parseBaseURL(readURL)
		if err != nil {
			return fmt.Errorf("WithReadURL: %w", err)
		}
		c.readURL = u
		return nil
	}
}

// WithPollTimeout sets how long one long-poll request of WaitRun asks the
// read API to hold it before answering "no change" (the server caps it at
// its WEFT_PROJECTOR_MAX_WAIT, 60s by default); WaitRun then asks again.
// Keep it below the HTTP client's Timeout (see WithHTTPClient), or every
// quiet poll fails as a timed-out attempt. Default DefaultPollTimeout; d
// must be positive.
func WithPollTimeout(d time.Duration) Option {
	return func(c *Client) error {
		if d <= 0 {
			return fmt.Errorf("%w: WithPollTimeout: %s is not positive", ErrInvalidConfig, d)
		}
		c.pollTimeout = d
		return nil
	}
}

// WithHTTPClient sets the *http.Client that sends the requests: its
// Transport, Timeout (per attempt) and redirect policy apply. The client is
// shared, not copied. Default: an http.Client with DefaultAttemptTimeout
// and a private clone of http.DefaultTransport.
func WithHTTPClient(hc *http.Client) Option {
	return func(c *Client) error {
		if hc == nil {
			return fmt.Errorf("%w: WithHTTPClient: nil *http.Client", ErrInvalidConfig)
		}
		c.hc = hc
		return nil
	}
}

// WithRetry sets the retry policy. Zero fields take their defaults (see
// RetryPolicy); RetryPolicy{MaxAttempts: 1} turns retries off.
func WithRetry(p RetryPolicy) Option {
	return func(c *Client) error {
		p = p.withDefaults()
		if err := p.validate(); err != nil {
			return err
		}
		c.retry = p
		return nil
	}
}

// WithUserAgent sets the User-Agent header. Default DefaultUserAgent. ua
// must not be empty or hold control characters.
func WithUserAgent(ua string) Option {
	return func(c *Client) error {
		if err := checkHeaderValue("WithUserAgent", ua); err != nil {
			return err
		}
		c.userAgent = ua
		return nil
	}
}

// checkHeaderValue refuses a value that would make every request fail to
// send (and so be retried in vain).
func checkHeaderValue(option, v string) error {
	if v == "" {
		return fmt.Errorf("%w: %s: empty value", ErrInvalidConfig, option)
	}
	if strings.ContainsFunc(v, func(r rune) bool { return r < 0x20 || r == 0x7f }) {
		return fmt.Errorf("%w: %s: value holds a control character", ErrInvalidConfig, option)
	}
	return nil
}

// parseBaseURL validates the gateway's base URL and returns it without a
// trailing slash, ready for "/v1/…" to be appended.
func parseBaseURL(raw string) (string, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return "", fmt.Errorf("%w: base URL: %w", ErrInvalidConfig, err)
	}
	switch {
	case u.Scheme != "http" && u.Scheme != "https":
		return "", fmt.Errorf("%w: base URL %q: scheme must be http or https", ErrInvalidConfig, raw)
	case u.Host == "":
		return "", fmt.Errorf("%w: base URL %q has no host", ErrInvalidConfig, raw)
	case u.User != nil:
		return "", fmt.Errorf("%w: base URL must not carry credentials; use WithToken", ErrInvalidConfig)
	case u.RawQuery != "" || u.ForceQuery || u.Fragment != "":
		return "", fmt.Errorf("%w: base URL %q must not have a query or fragment", ErrInvalidConfig, raw)
	}
	u.Path = strings.TrimRight(u.Path, "/")
	u.RawPath = strings.TrimRight(u.RawPath, "/")
	return u.String(), nil
}
