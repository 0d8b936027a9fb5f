package client

import (
	"context"
	"fmt"
	"net/url"
	"strconv"

	"github.com/weftrun/weft/pkg/api"
	"github.com/weftrun/weft/pkg/events"
)

// GetRunOption changes what GetRun asks the read API for.
type GetRunOption func(url.Values)

// TopSteps asks GetRun and WaitRun for the view with the children of
// forEach steps left out of its Steps (GET /v1/runs/{runId}?steps=top),
// which is what the read API answers by default: a forEach step is one
// step whose ForEach counts its children's progress, and a run of 10,000
// elements answers with its top-level steps only. Read the children a
// page at a time with StepChildren. The view's StepsDone and StepsTotal
// are the same either way; they count top-level steps.
func TopSteps() GetRunOption {
	return func(q url.Values) { q.Set("steps", "top") }
}

// AllSteps asks GetRun and WaitRun for the view with every step, forEach
// steps' children included (GET /v1/runs/{runId}?steps=all). The read
// API charges such an answer to the key's request rate by its size (one
// request per 100 steps, by default), so a run of 10,000 children costs
// about 100 requests: read children with StepChildren where a page will
// do.
func AllSteps() GetRunOption {
	return func(q url.Values) { q.Set("steps", "all") }
}

// getRunQuery is the query string opts ask for; nil for none.
func getRunQuery(opts []GetRunOption) url.Values {
	if len(opts) == 0 {
		return nil
	}
	q := url.Values{}
	for _, o := range opts {
		o(q)
	}
	return q
}

// Step returns one step's detail (GET /v1/runs/{runId}/steps/{stepId}):
// the input its latest attempt ran with and where that came from, its
// output, the reason it was skipped, and every logical attempt with its
// times, worker and error, which the run's view does not carry. The
// projector reads it from the event log: the step's own events, so a
// forEach step's detail holds its evaluated list and its ForEach, not
// its children's; name a child by its id (events.ChildStepID, such as
// "each[3]") to read the child's. A step with no event yet has no
// attempts and no input. An unknown run, or one the key cannot see,
// yields an error with code api.CodeNotFound. runID is checked as GetRun
// checks it, and stepID the same way.
func (c *Client) Step(ctx context.Context, runID, stepID string) (*events.StepDetail, error) {
	if err := checkStepPath(runID, stepID); err != nil {
		return nil, err
	}
	var d events.StepDetail
	if err := c.get(ctx, stepPath(runID, stepID), nil, nil, &d); err != nil {
		return nil, err
	}
	return &d, nil
}

// ChildFilter selects a page of StepChildren. The zero value asks for the
// first page, of the server's default size (100).
type ChildFilter struct {
	// FromIndex lists the children whose element index is FromIndex or
	// above; 0 lists them from the first. The next page's FromIndex is
	// the page's NextAfterIndex + 1.
	FromIndex int
	// Limit is the page size, 1 to the server's maximum (1,000 by
	// default; a larger one fails with api.CodeInvalidArgument); 0 means
	// the server's default. A page is charged to the key's request rate by
	// its size, as AllSteps is.
	Limit int
}

// query is the filter as the children route's query string.
func (f ChildFilter) query() url.Values {
	q := url.Values{"afterIndex": {strconv.Itoa(f.FromIndex - 1)}}
	if f.Limit != 0 {
		q.Set("limit", strconv.Itoa(f.Limit))
	}
	return q
}

// StepChildren returns one page of forEach step stepID's children, in
// element order, from the run's view as the read API has it now
// (GET /v1/runs/{runId}/steps/{stepId}/children). While the page's More
// is set, ask again with FromIndex NextAfterIndex + 1. A step that is not
// a forEach step has no children. An unknown run yields an error with
// code api.CodeNotFound; a FromIndex below 0 fails with ErrInvalidRequest
// and is not sent, and runID and stepID are checked as Step checks them.
func (c *Client) StepChildren(ctx context.Context, runID, stepID string, f ChildFilter) (*api.ChildPage, error) {
	if err := checkStepPath(runID, stepID); err != nil {
		return nil, err
	}
	if f.FromIndex < 0 {
		return nil, fmt.Errorf("%w: FromIndex %d is negative", ErrInvalidRequest, f.FromIndex)
	}
	var page api.ChildPage
	if err := c.get(ctx, stepPath(runID, stepID)+"/children", f.query(), nil, &page); err != nil {
		return nil, err
	}
	return &page, nil
}

// checkStepPath refuses a run or step id that cannot name a resource in a
// path (validRunID).
func checkStepPath(runID, stepID string) error {
	if !validRunID(runID) {
		return fmt.Errorf("%w: runID %q", ErrInvalidRequest, runID)
	}
	if !validRunID(stepID) {
		return fmt.Errorf("%w: stepID %q", ErrInvalidRequest, stepID)
	}
	return nil
}

// stepPath is the escaped path of a step's resource.
func stepPath(runID, stepID string) string {
	return runPath(runID) + "/steps/" + url.PathEscape(stepID)
}
