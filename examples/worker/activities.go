package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/weftrun/weft/pkg/worker"
)

// maxBody bounds the response body fetch-json reports: an output goes into
// the run's history, which keeps small values (64 KiB at most).
const maxBody = 32 << 10

// fetchTimeout bounds one request of fetch-json; the attempt's deadline
// (the step's timeout) applies through its context too.
const fetchTimeout = 20 * time.Second

// FetchJSON returns the activity fetch-json, which makes its requests with
// client. It takes {"url": U, "token":
// {"secretRef": NAME}}: it GETs U with the secret NAME, one of the step's
// secrets, as a bearer token, and completes with {"status": S, "body": B},
// B the response's JSON. The token is resolved here, in the worker, from
// the worker's secrets provider; the plan, the task and the run's history
// hold only the reference.
//
// A 5xx or 429 answer fails the attempt retryably, so the step's retry
// policy tries again; any other status that is not 2xx fails it for good.
func FetchJSON(client *http.Client) worker.ActivityFunc {
	return func(ctx context.Context, in worker.Input) (worker.Output, error) {
		return fetchJSON(ctx, client, in)
	}
}

func fetchJSON(ctx context.Context, client *http.Client, in worker.Input) (worker.Output, error) {
	var req struct {
		URL   string `json:"url"`
		Token struct {
			SecretRef string `json:"secretRef"`
		} `json:"token"`
	}
	if err := in.Decode(&req); err != nil || req.URL == "" || req.Token.SecretRef == "" {
		return worker.Output{}, worker.NonRetryable("BAD_INPUT", `fetch-json wants {"url": U, "token": {"secretRef": NAME}}`)
	}
	token, err := in.Secret(ctx, req.Token.SecretRef)
	if err != nil {
		return worker.Output{}, worker.NonRetryable("NO_SECRET", err.Error()) // names the secret, never its value
	}
	httpReq, err := http.NewRequestWithContext(ctx, http.MethodGet, req.URL, nil)
	if err != nil {
		return worker.Output{}, worker.NonRetryable("BAD_INPUT", err.Error())
	}
	httpReq.Header.Set("Authorization", "Bearer "+token)
	httpReq.Header.Set("Accept", "application/json")
	resp, err := client.Do(httpReq)
	if err != nil {
		return worker.Output{}, err // a plain error: retryable
	}
	defer func() { _ = resp.Body.Close() }()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxBody+1))
	if err != nil {
		return worker.Output{}, err
	}
	switch code := fmt.Sprintf("HTTP_%d", resp.StatusCode); {
	case resp.StatusCode >= 500 || resp.StatusCode == http.StatusTooManyRequests:
		return worker.Output{}, worker.Retryable(code, resp.Status)
	case resp.StatusCode/100 != 2:
		return worker.Output{}, worker.NonRetryable(code, resp.Status)
	case len(body) > maxBody:
		return worker.Output{}, worker.NonRetryable("BODY_TOO_LARGE", fmt.Sprintf("the body is over %d bytes: store it elsewhere and return a reference", maxBody))
	case !json.Valid(body):
		return worker.Output{}, worker.NonRetryable("NOT_JSON", "the body is not JSON")
	}
	return worker.NewOutput(map[string]any{"status": resp.StatusCode, "body": json.RawMessage(body)})
}

// CountBy is the activity count-by, a pure transformation. It takes
// {"items": [OBJECT...], "field": F} and completes with {"total": N,
// "counts": {VALUE: COUNT}}: how many items have each value of their field
// F (an item without it counts under "").
func CountBy(_ context.Context, in worker.Input) (worker.Output, error) {
	var req struct {
		Items []map[string]json.RawMessage `json:"items"`
		Field string                       `json:"field"`
	}
	if err := in.Decode(&req); err != nil || req.Field == "" {
		return worker.Output{}, worker.NonRetryable("BAD_INPUT", `count-by wants {"items": [OBJECT...], "field": F}`)
	}
	counts := map[string]int{}
	for _, item := range req.Items {
		counts[label(item[req.Field])]++
	}
	return worker.NewOutput(map[string]any{"total": len(req.Items), "counts": counts})
}

// label is a field's value as a count's key: a string as it is, anything
// else as its JSON text, "" when absent.
func label(v json.RawMessage) string {
	var s string
	if json.Unmarshal(v, &s) == nil {
		return s
	}
	return strings.TrimSpace(string(v))
}
