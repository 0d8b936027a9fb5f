package client

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/google/uuid"

	"github.com/weftrun/weft/pkg/api"
	"github.com/weftrun/weft/pkg/periodic"
)

// MaxResponseBytes bounds how much of a response body the client reads.
const MaxResponseBytes = 1 << 20

// Client calls the REST API of Weft's signal gateway and, when built
// WithReadURL, the projector's read API. Build one with New; it is safe for
// concurrent use.
type Client struct {
	baseURL     string
	readURL     string // "" until WithReadURL
	pollTimeout time.Duration
	token       string
	userAgent   string
	hc          *http.Client
	retry       RetryPolicy

	// Seams for tests (export_test.go): how to wait, what time it is, how
	// to draw a backoff.
	sleep  func(context.Context, time.Duration) error
	now    func() time.Time
	jitter func(time.Duration) time.Duration
}

// New returns a Client of the gateway at baseURL, an http or https URL
// with a host and optionally a path prefix ("https://weft.example.com",
// "http://localhost:8080/weft"), without credentials, query or fragment.
// An error wraps ErrInvalidConfig.
func New(baseURL string, opts ...Option) (*Client, error) {
	base, err := parseBaseURL(baseURL)
	if err != nil {
		return nil, err
	}
	c := &Client{
		baseURL:     base,
		pollTimeout: DefaultPollTimeout,
		userAgent:   DefaultUserAgent,
		hc:          defaultHTTPClient(),
		retry:       RetryPolicy{}.withDefaults(),
		sleep:       periodic.Sleep,
		now:         time.Now,
		jitter:      fullJitter,
	}
	for _, opt := range opts {
		if err := opt(c); err != nil {
			return nil, err
		}
	}
	return c, nil
}

// StartRun starts a run (POST /v1/runs). The result's Duplicate is true
// when the gateway had already started a run for the same tenant, project,
// environment, plan, plan version and RunRequestID; that run is returned
// and nothing new is started.
//
// When req.RunRequestID is empty, StartRun sets a fresh UUIDv7 before the
// first attempt and sends it on every retry, so retries never start a
// second run. The id is in the result. To make retries of your own
// idempotent too (across processes, say), set RunRequestID yourself.
//
// An HTTP error answer yields an error wrapping *Error; see the package
// documentation for what is retried.
func (c *Client) StartRun(ctx context.Context, req api.StartRunRequest) (*api.StartRunResult, error) {
	if err := ensureID(&req.RunRequestID); err != nil {
		return nil, err
	}
	var res api.StartRunResult
	if err := c.call(ctx, http.MethodPost, "/v1/runs", req, &res); err != nil {
		return nil, err
	}
	return &res, nil
}

// Signal sends a signal to the run runID (POST /v1/runs/{runId}/signals).
// A repeat of (runID, SignalName, SignalID) returns the first request's
// result and enqueues nothing.
//
// When req.SignalID is empty, Signal sets a fresh UUIDv7 before the first
// attempt and sends it on every retry, so retries never enqueue the signal
// twice; the id is in the result. req.WorkflowID must be empty or equal
// runID (the path names the run; the body does not carry it). runID must
// not be empty, "." or "..": such a request fails with ErrInvalidRequest
// and is not sent.
//
// An HTTP error answer yields an error wrapping *Error. Code
// api.CodeSignalAcceptanceIndeterminate (409) is never retried: see its
// documentation before sending the signal again.
func (c *Client) Signal(ctx context.Context, runID string, req api.SignalRequest) (*api.AcceptedSignalResult, error) {
	if err := checkRunTarget(runID, "WorkflowID", req.WorkflowID); err != nil {
		return nil, err
	}
	req.WorkflowID = ""
	if err := ensureID(&req.SignalID); err != nil {
		return nil, err
	}
	var res api.AcceptedSignalResult
	if err := c.call(ctx, http.MethodPost, runPath(runID)+"/signals", req, &res); err != nil {
		return nil, err
	}
	return &res, nil
}

// ensureID sets *id, when it is empty, to a fresh UUIDv7: the id a
// request keeps on every retry, so that retries are repeats.
func ensureID(id *string) error {
	if *id != "" {
		return nil
	}
	u, err := uuid.NewV7()
	if err != nil {
		return fmt.Errorf("client: generate id: %w", err)
	}
	*id = u.String()
	return nil
}

// checkRunTarget refuses, with ErrInvalidRequest, a runID that cannot name
// a run in a path, and a request body whose own run id (field, bodyID) is
// set to another run: the path names the run, the body does not carry it.
func checkRunTarget(runID, field, bodyID string) error {
	switch {
	case !validRunID(runID):
		return fmt.Errorf("%w: runID %q", ErrInvalidRequest, runID)
	case bodyID != "" && bodyID != runID:
		return fmt.Errorf("%w: %s %q is not runID %q", ErrInvalidRequest, field, bodyID, runID)
	}
	return nil
}

// do sends req with the client's headers and decodes a 2xx answer into
// out, unless out is nil. A 304 answer to a GET yields errNotModified; any other non-2xx
// answer an *Error.
func (c *Client) do(req *http.Request, out any) error {
	_, err := c.doStatus(req, out)
	return err
}

// doStatus is do, also returning the status of a 2xx answer (0 with an
// error).
func (c *Client) doStatus(req *http.Request, out any) (int, error) {
	req.Header.Set("Accept", "application/json")
	req.Header.Set("User-Agent", c.userAgent)
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		return 0, &transportError{err: err}
	}
	defer func() { _ = resp.Body.Close() }()
	data, err := io.ReadAll(io.LimitReader(resp.Body, MaxResponseBytes+1))
	if err != nil {
		return 0, &transportError{err: fmt.Errorf("client: read HTTP %d answer: %w", resp.StatusCode, err)}
	}
	if resp.StatusCode == http.StatusNotModified && req.Method == http.MethodGet {
		return 0, errNotModified
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return 0, decodeError(resp.StatusCode, resp.Header, data, c.now())
	}
	if out == nil {
		return resp.StatusCode, nil
	}
	if len(data) > MaxResponseBytes {
		return 0, fmt.Errorf("%w: HTTP %d answer is over %d bytes", ErrUnexpectedResponse, resp.StatusCode, MaxResponseBytes)
	}
	if err := json.Unmarshal(data, out); err != nil {
		return 0, fmt.Errorf("%w: HTTP %d answer is not the expected JSON: %w", ErrUnexpectedResponse, resp.StatusCode, err)
	}
	return resp.StatusCode, nil
}

// defaultHTTPClient is the *http.Client of a Client built without
// WithHTTPClient. Its transport is a clone of http.DefaultTransport owned by
// this Client alone, so code that closes the default transport's idle
// connections (httptest.Server.Close does) cannot break a request in flight.
// It keeps up to MaxIdleConnsPerHost idle connections to the gateway, not
// net/http's default of 2: a Client is safe for concurrent use, and with
// only 2 kept, every concurrent call beyond them would open a connection
// and close it again.
func defaultHTTPClient() *http.Client {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.MaxIdleConnsPerHost = MaxIdleConnsPerHost
	return &http.Client{Timeout: DefaultAttemptTimeout, Transport: t}
}

// MaxIdleConnsPerHost is how many idle connections a Client built without
// WithHTTPClient keeps open to each host, for concurrent calls to reuse.
const MaxIdleConnsPerHost = 64
