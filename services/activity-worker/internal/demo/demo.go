// Package demo holds the activities the activity-worker service ships for
// the dev stack and tests: echo, sleep, fail-n-times and http-get. Each
// decodes its input strictly and fails non-retryably (CodeInvalidInput) on
// input it cannot use.
package demo

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/weftrun/weft/pkg/worker"
)

// CodeInvalidInput is the code of a demo activity's non-retryable failure
// on input it cannot use.
const CodeInvalidInput = "INVALID_INPUT"

// CodePlannedFailure is the code of fail-n-times' retryable failures.
const CodePlannedFailure = "PLANNED_FAILURE"

// MaxBodyBytes is the most of a response body http-get reads; it reports
// a longer body as truncated.
const MaxBodyBytes = 16 << 20

// Register registers every demo activity with w. client serves http-get:
// build it with NewHTTPClient, which holds every connection to an
// AddressPolicy and does not follow redirects.
func Register(w *worker.Worker, client *http.Client) error {
	for name, fn := range map[string]worker.ActivityFunc{
		"echo":         Echo,
		"sleep":        Sleep,
		"fail-n-times": FailNTimes,
		"http-get":     HTTPGet(client),
	} {
		if err := w.Register(name, fn); err != nil {
			return err
		}
	}
	return nil
}

// Echo completes with its input as its output.
func Echo(_ context.Context, in worker.Input) (worker.Output, error) {
	return worker.Output{JSON: in.JSON}, nil
}

// Sleep waits {"ms": N} milliseconds, or until its context ends, and
// completes with {"sleptMs": N}.
func Sleep(ctx context.Context, in worker.Input) (worker.Output, error) {
	var req struct {
		Ms *int64 `json:"ms"`
	}
	if err := decode(in, &req); err != nil {
		return worker.Output{}, err
	}
	if req.Ms == nil || *req.Ms < 0 {
		return worker.Output{}, worker.NonRetryable(CodeInvalidInput, `sleep wants {"ms": N} with N >= 0`)
	}
	t := time.NewTimer(time.Duration(*req.Ms) * time.Millisecond)
	defer t.Stop()
	select {
	case <-t.C:
		return worker.NewOutput(map[string]int64{"sleptMs": *req.Ms})
	case <-ctx.Done():
		return worker.Output{}, ctx.Err()
	}
}

// FailNTimes takes {"times": N, "key": K}. It fails retryably
// (CodePlannedFailure) while the task's logicalAttemptId is N or less, and
// completes with {"key": K, "logicalAttemptId": A} from logical attempt
// N+1 on. It keeps no state: the decision depends on the logical attempt
// alone, so every worker agrees, and a redelivery of a failing attempt
// (a higher engineAttemptId) fails again. Only the engine's retries, which
// raise logicalAttemptId, get past it. K is only echoed, to tell runs apart.
func FailNTimes(_ context.Context, in worker.Input) (worker.Output, error) {
	var req struct {
		Times int    `json:"times"`
		Key   string `json:"key"`
	}
	if err := decode(in, &req); err != nil {
		return worker.Output{}, err
	}
	attempt, err := strconv.Atoi(in.LogicalAttemptID)
	if err != nil || attempt < 1 {
		return worker.Output{}, worker.NonRetryable(CodeInvalidInput, fmt.Sprintf("logicalAttemptId %q is not a positive number", in.LogicalAttemptID))
	}
	if attempt <= req.Times {
		return worker.Output{}, worker.Retryable(CodePlannedFailure,
			fmt.Sprintf("planned failure %d of %d (key %q)", attempt, req.Times, req.Key))
	}
	return worker.NewOutput(map[string]string{"key": req.Key, "logicalAttemptId": in.LogicalAttemptID})
}

// HTTPGet returns the http-get activity, which makes its requests with
// client. It takes {"url": U}, GETs U (http or https) and completes with
// {"status": S, "bodyBytes": B, "truncated": T}, whatever the status; a
// redirect is reported, not followed (with NewHTTPClient's client). An
// address the client's AddressPolicy refuses is a non-retryable
// CodeAddressRefused failure; any other transport error is a retryable
// CodeTransport failure whose message names the error's class only, never
// bytes the remote end sent.
func HTTPGet(client *http.Client) worker.ActivityFunc {
	return func(ctx context.Context, in worker.Input) (worker.Output, error) {
		var req struct {
			URL string `json:"url"`
		}
		if err := decode(in, &req); err != nil {
			return worker.Output{}, err
		}
		u, err := url.Parse(req.URL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return worker.Output{}, worker.NonRetryable(CodeInvalidInput, `http-get wants {"url": "http(s)://host/..."}`)
		}
		hreq, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), http.NoBody)
		if err != nil {
			return worker.Output{}, worker.NonRetryable(CodeInvalidInput, `http-get wants {"url": "http(s)://host/..."}`)
		}
		resp, err := client.Do(hreq)
		if err != nil {
			return worker.Output{}, transportFailure("request", err)
		}
		defer func() { _ = resp.Body.Close() }()
		n, err := io.Copy(io.Discard, io.LimitReader(resp.Body, MaxBodyBytes+1))
		if err != nil {
			return worker.Output{}, transportFailure("read body", err)
		}
		return worker.NewOutput(map[string]any{
			"status": resp.StatusCode, "bodyBytes": min(n, MaxBodyBytes), "truncated": n > MaxBodyBytes,
		})
	}
}

// decode unmarshals the input into v, rejecting unknown fields, as a
// non-retryable CodeInvalidInput failure.
func decode(in worker.Input, v any) error {
	if len(in.JSON) == 0 {
		return worker.NonRetryable(CodeInvalidInput, in.Activity+": the task has no input")
	}
	dec := json.NewDecoder(bytes.NewReader(in.JSON))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return worker.NonRetryable(CodeInvalidInput, in.Activity+": "+err.Error())
	}
	return nil
}
