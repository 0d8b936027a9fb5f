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
