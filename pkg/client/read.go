package client

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"time"

	"github.com/weftrun/weft/pkg/api"
)

// RunFilter selects the runs of ListRuns and Runs. The zero value selects
// every run of the key's tenant, 50 to a page.
type RunFilter struct {
	// Status keeps runs whose status is any of these (PENDING, APPROVED,
	// RUNNING, PAUSED, COMPLETED, FAILED, CANCELLED, or api.StatusStale
	// for runs with an open gap). Empty: any status.
	Status []string
	// PlanID keeps runs of this plan id, matched exactly. Empty: any plan.
	PlanID string
	// ProjectID keeps runs of this project id, matched exactly. Empty: any
	// project.
	ProjectID string
	// EnvironmentID keeps runs of this environment id, matched exactly.
	// Empty: any environment.
	EnvironmentID string
	// TriggerID keeps the runs this trigger's events started (run request
	// id "{triggerId}:{eventId}"). Empty: any run.
	TriggerID string
	// ParentRunID keeps the child runs the subPlan steps of this run
	// started; it must be a run id. Empty: any run.
	ParentRunID string
	// PlanVersion keeps runs of this version of PlanID, which it needs.
	// Empty: any version.
	PlanVersion string
	// Labels keeps the runs that carry every one of these labels (each
	// sent as label=KEY=VALUE). Empty: any run.
	Labels map[string]string
	// ScheduleID keeps the runs this schedule's fires started (run request
	// id "{scheduleId}:{scheduledFor}"). Empty: any run.
	ScheduleID string
	// RerunOf keeps the reruns of this run; it must be a run id. Empty:
	// any run.
	RerunOf string
	// QueuedKey keeps the QUEUED runs that a plan's concurrency key of
	// this name holds, as their queued.key says (`input.customerId =
	// "42"`; docs/flow-control.md). Empty: any run.
	QueuedKey string
	// CreatedAfter and CreatedBefore keep the runs created in
	// [CreatedAfter, CreatedBefore); EndedAfter and EndedBefore those that
	// ended (COMPLETED, FAILED or CANCELLED) in [EndedAfter, EndedBefore).
	// A zero time is no bound.
	CreatedAfter, CreatedBefore, EndedAfter, EndedBefore time.Time
	// Limit is the page size, 1 to 200; 0 means the server's default (50).
	Limit int
	// Cursor is the NextCursor of the previous page; empty for the first.
	Cursor string
}

// query is the filter as GET /v1/runs's query string.
func (f RunFilter) query() url.Values {
	q := url.Values{}
	for _, s := range f.Status {
		q.Add("status", s)
	}
	for _, p := range [...]struct{ name, value string }{
		{"plan", f.PlanID}, {"planVersion", f.PlanVersion}, {"trigger", f.TriggerID}, {"schedule", f.ScheduleID},
		{"parent", f.ParentRunID}, {"rerunOf", f.RerunOf}, {"queuedKey", f.QueuedKey}, {"projectId", f.ProjectID}, {"environmentId", f.EnvironmentID},
		{"cursor", f.Cursor},
	} {
		if p.value != "" {
			q.Set(p.name, p.value)
		}
	}
	for _, k := range slices.Sorted(maps.Keys(f.Labels)) {
		q.Add("label", k+"="+f.Labels[k])
	}
	for _, p := range [...]struct {
		name string
		at   time.Time
	}{{"createdAfter", f.CreatedAfter}, {"createdBefore", f.CreatedBefore}, {"endedAfter", f.EndedAfter}, {"endedBefore", f.EndedBefore}} {
		if !p.at.IsZero() {
			q.Set(p.name, p.at.Format(time.RFC3339Nano))
		}
	}
	if f.Limit != 0 {
		q.Set("limit", strconv.Itoa(f.Limit))
	}
	return q
}

// GetRun returns the run's view as the read API has it now
// (GET /v1/runs/{runId}). A run the key cannot see, or that does not
// exist (yet: the read API lags the gateway by a moment), yields an error
// with code api.CodeNotFound. runID must not be empty, "." or "..": such a
// request fails with ErrInvalidRequest and is not sent. The view leaves
// forEach steps' children out (TopSteps, the read API's default); with
// AllSteps it lists them too.
func (c *Client) GetRun(ctx context.Context, runID string, opts ...GetRunOption) (*api.RunView, error) {
	if !validRunID(runID) {
		return nil, fmt.Errorf("%w: runID %q", ErrInvalidRequest, runID)
	}
	var v api.RunView
	if err := c.get(ctx, runPath(runID), getRunQuery(opts), nil, &v); err != nil {
		return nil, err
	}
	return &v, nil
}

// WaitRun returns the run's view once its LastEventSeq is past afterSeq:
// the next change after a view the caller holds (pass its LastEventSeq),
// or the first one (pass 0). It long-polls the read API
// (?waitForSeq=afterSeq+1 with If-None-Match), one request per poll window
// (WithPollTimeout, cut short by ctx's deadline), and asks again after a
// window that saw no change, so it may wait as long as ctx allows. A change
// of the view's Stale flag alone does not end the wait. opts choose the
// view's steps as GetRun's do (top-level by default).
//
// A run the read API does not know is waited for too, for one poll window;
// then WaitRun fails with code api.CodeNotFound. When ctx ends, WaitRun
// returns an error wrapping ctx.Err().
func (c *Client) WaitRun(ctx context.Context, runID string, afterSeq int64, opts ...GetRunOption) (*api.RunView, error) {
	if !validRunID(runID) {
		return nil, fmt.Errorf("%w: runID %q", ErrInvalidRequest, runID)
	}
	if afterSeq < 0 {
		return nil, fmt.Errorf("%w: afterSeq %d is negative", ErrInvalidRequest, afterSeq)
	}
	header := http.Header{"If-None-Match": {fmt.Sprintf(`"%d", "%d-stale"`, afterSeq, afterSeq)}}
	for {
		if err := ctx.Err(); err != nil {
			return nil, fmt.Errorf("client: wait for run %s past runSeq %d: %w", runID, afterSeq, err)
		}
		q := url.Values{
			"waitForSeq": {strconv.FormatInt(afterSeq+1, 10)},
			"timeout":    {c.pollWindow(ctx).String()},
		}
		for _, o := range opts {
			o(q)
		}
		var v api.RunView
		err := c.get(ctx, runPath(runID), q, header, &v)
		switch {
		case errors.Is(err, errNotModified):
		case err != nil:
			return nil, err
		case v.LastEventSeq > afterSeq:
			return &v, nil
		}
	}
}

// pollWindow is how long the next long poll may be held: the poll timeout,
// or less when ctx's deadline is nearer, rounded down to whole
// milliseconds.
func (c *Client) pollWindow(ctx context.Context) time.Duration {
	d := c.pollTimeout
	if deadline, ok := ctx.Deadline(); ok {
		d = min(d, time.Until(deadline))
	}
	return max(d, 0).Truncate(time.Millisecond)
}

// ListRuns returns one page of the key's tenant's runs, newest first
// (GET /v1/runs). Pass the page's NextCursor in the filter's Cursor for
// the next page; Runs does that for you.
func (c *Client) ListRuns(ctx context.Context, f RunFilter) (*api.RunList, error) {
	var list api.RunList
	if err := c.get(ctx, "/v1/runs", f.query(), nil, &list); err != nil {
		return nil, err
	}
	return &list, nil
}

// Runs iterates over every run f selects, newest first, fetching pages of
// f.Limit as it goes, from f.Cursor on. A failed page is yielded as the
// error of a zero RunSummary, and ends the iteration.
func (c *Client) Runs(ctx context.Context, f RunFilter) iter.Seq2[api.RunSummary, error] {
	return func(yield func(api.RunSummary, error) bool) {
		for {
			page, err := c.ListRuns(ctx, f)
			if err != nil {
				yield(api.RunSummary{}, err)
				return
			}
			for _, r := range page.Runs {
				if !yield(r, nil) {
					return
				}
			}
			if page.NextCursor == "" {
				return
			}
			f.Cursor = page.NextCursor
		}
	}
}

// RunEvents returns the run's events after runSeq afterSeq, in runSeq
// order, at most limit of them (1 to 1000; 0 means the server's default,
// 100), from the event log (GET /v1/runs/{runId}/events). While the page's
// More is set, ask again with its NextAfterSeq. An unknown run yields an
// error with code api.CodeNotFound; runID is checked as GetRun checks it.
func (c *Client) RunEvents(ctx context.Context, runID string, afterSeq int64, limit int) (*api.EventPage, error) {
	if !validRunID(runID) {
		return nil, fmt.Errorf("%w: runID %q", ErrInvalidRequest, runID)
	}
	q := url.Values{"afterSeq": {strconv.FormatInt(afterSeq, 10)}}
	if limit != 0 {
		q.Set("limit", strconv.Itoa(limit))
	}
	var page api.EventPage
	if err := c.get(ctx, runPath(runID)+"/events", q, nil, &page); err != nil {
		return nil, err
	}
	return &page, nil
}

// get sends GET readURL+path?query with header, with retries, and decodes
// a 2xx answer into out. A 304 answer yields errNotModified.
func (c *Client) get(ctx context.Context, path string, query url.Values, header http.Header, out any) error {
	if c.readURL == "" {
		return ErrNoReadURL
	}
	target := c.readURL + path
	if len(query) > 0 {
		target += "?" + query.Encode()
	}
	return c.withRetries(ctx, func(ctx context.Context) error {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, target, http.NoBody)
		if err != nil {
			return fmt.Errorf("client: build request: %w", err)
		}
		for k, v := range header {
			req.Header[k] = v
		}
		return c.do(req, out)
	})
}

// validRunID reports whether runID can name a run in a path: not empty,
// "." or "..", which a URL would resolve away.
func validRunID(runID string) bool {
	return runID != "" && runID != "." && runID != ".."
}

// runPath is the escaped path of a run's resource.
func runPath(runID string) string { return "/v1/runs/" + url.PathEscape(runID) }
