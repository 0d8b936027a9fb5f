package client

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"

	"github.com/weftrun/weft/pkg/api"
)

// Page selects one page of a list of schedules or triggers: Limit items
// (1 to 200; 0 means the server's default, 50) after the page Cursor
// names (the previous page's NextCursor; empty for the first).
type Page struct {
	Limit  int
	Cursor string
}

// path is base with the page's query string.
func (p Page) path(base string) string { return withQuery(base, p.query()) }

// query is the page's limit and cursor as query parameters.
func (p Page) query() url.Values {
	q := url.Values{}
	if p.Limit != 0 {
		q.Set("limit", strconv.Itoa(p.Limit))
	}
	if p.Cursor != "" {
		q.Set("cursor", p.Cursor)
	}
	return q
}

// withQuery is base with q as its query string, if q has any parameter.
func withQuery(base string, q url.Values) string {
	if len(q) == 0 {
		return base
	}
	return base + "?" + q.Encode()
}

// CreateSchedule creates a schedule (POST /v1/schedules; docs/schedules.md).
// When req.ScheduleID is empty it sets a fresh UUIDv7 before the first
// attempt and sends it on every retry, so retries create one schedule; the
// id is in the result. A create repeating an existing schedule's id and
// definition returns that schedule; with another definition it fails
// with code api.CodeAlreadyExists.
func (c *Client) CreateSchedule(ctx context.Context, req api.ScheduleRequest) (*api.Schedule, error) {
	if err := ensureID(&req.ScheduleID); err != nil {
		return nil, err
	}
	return into(func(s *api.Schedule) error {
		return c.call(ctx, http.MethodPost, "/v1/schedules", req, s)
	})
}

// UpdateSchedule replaces the definition of schedule id (PUT
// /v1/schedules/{scheduleId}); req.ScheduleID must be empty or id.
func (c *Client) UpdateSchedule(ctx context.Context, id string, req api.ScheduleRequest) (*api.Schedule, error) {
	if req.ScheduleID != "" && req.ScheduleID != id {
		return nil, fmt.Errorf("%w: ScheduleID %q is not id %q", ErrInvalidRequest, req.ScheduleID, id)
	}
	return into(func(s *api.Schedule) error {
		return c.resourceCall(ctx, http.MethodPut, "/v1/schedules/", id, "", req, s)
	})
}

// GetSchedule reads schedule id (GET /v1/schedules/{scheduleId}): its
// definition, next and last fire, and the fire times it skipped and why.
// An unknown schedule yields code api.CodeNotFound.
func (c *Client) GetSchedule(ctx context.Context, id string) (*api.Schedule, error) {
	return into(func(s *api.Schedule) error {
		return c.resourceCall(ctx, http.MethodGet, "/v1/schedules/", id, "", nil, s)
	})
}

// ListSchedules returns one page of the key's tenant's schedules, in id
// order, without their plans and inputs (GET /v1/schedules).
func (c *Client) ListSchedules(ctx context.Context, p Page) (*api.ScheduleList, error) {
	return into(func(l *api.ScheduleList) error {
		return c.call(ctx, http.MethodGet, p.path("/v1/schedules"), nil, l)
	})
}

// PauseSchedule stops schedule id from firing until ResumeSchedule (POST
// /v1/schedules/{scheduleId}/pause); pausing a paused schedule changes
// nothing.
func (c *Client) PauseSchedule(ctx context.Context, id string) (*api.Schedule, error) {
	return into(func(s *api.Schedule) error {
		return c.resourceCall(ctx, http.MethodPost, "/v1/schedules/", id, "/pause", nil, s)
	})
}

// ResumeSchedule lets schedule id fire again (POST
// /v1/schedules/{scheduleId}/resume). The fire times that passed while it
// was paused are misfires, handled by its misfire policy.
func (c *Client) ResumeSchedule(ctx context.Context, id string) (*api.Schedule, error) {
	return into(func(s *api.Schedule) error {
		return c.resourceCall(ctx, http.MethodPost, "/v1/schedules/", id, "/resume", nil, s)
	})
}

// DeleteSchedule deletes schedule id (DELETE /v1/schedules/{scheduleId}).
// A retry after a lost answer may fail with api.CodeNotFound although the
// first attempt deleted it.
func (c *Client) DeleteSchedule(ctx context.Context, id string) error {
	return c.resourceCall(ctx, http.MethodDelete, "/v1/schedules/", id, "", nil, nil)
}

// CreateTrigger creates an event trigger (POST /v1/triggers), idempotent
// as CreateSchedule is: an empty TriggerID is set to a fresh UUIDv7 before
// the first attempt.
func (c *Client) CreateTrigger(ctx context.Context, req api.TriggerRequest) (*api.Trigger, error) {
	if err := ensureID(&req.TriggerID); err != nil {
		return nil, err
	}
	return into(func(tr *api.Trigger) error {
		return c.call(ctx, http.MethodPost, "/v1/triggers", req, tr)
	})
}

// GetTrigger reads trigger id (GET /v1/triggers/{triggerId}).
func (c *Client) GetTrigger(ctx context.Context, id string) (*api.Trigger, error) {
	return into(func(tr *api.Trigger) error {
		return c.resourceCall(ctx, http.MethodGet, "/v1/triggers/", id, "", nil, tr)
	})
}

// ListTriggers returns one page of the key's tenant's triggers, in id
// order, without their plans (GET /v1/triggers).
func (c *Client) ListTriggers(ctx context.Context, p Page) (*api.TriggerList, error) {
	return into(func(l *api.TriggerList) error {
		return c.call(ctx, http.MethodGet, p.path("/v1/triggers"), nil, l)
	})
}

// DeleteTrigger deletes trigger id (DELETE /v1/triggers/{triggerId}); see
// DeleteSchedule about retries.
func (c *Client) DeleteTrigger(ctx context.Context, id string) error {
	return c.resourceCall(ctx, http.MethodDelete, "/v1/triggers/", id, "", nil, nil)
}

// SendTriggerEvent sends an event to trigger id (POST
// /v1/triggers/{triggerId}/events). The result's Duplicate is true when
// an event of the same EventID already started a run, which is returned;
// nothing new starts. When ev.EventID is empty the client sets a fresh
// UUIDv7 before the first attempt, so its retries start one run; the id is
// in the result. Give the event's own stable id to dedupe redeliveries
// from your source too.
func (c *Client) SendTriggerEvent(ctx context.Context, id string, ev api.TriggerEvent) (*api.TriggerEventResult, error) {
	if err := ensureID(&ev.EventID); err != nil {
		return nil, err
	}
	return into(func(res *api.TriggerEventResult) error {
		return c.resourceCall(ctx, http.MethodPost, "/v1/triggers/", id, "/events", ev, res)
	})
}

// into runs call with a fresh T to decode into, and returns it unless
// call fails.
func into[T any](call func(*T) error) (*T, error) {
	v := new(T)
	if err := call(v); err != nil {
		return nil, err
	}
	return v, nil
}

// resourceCall is call on prefix + the escaped id + suffix, refusing an
// id a URL would resolve away.
func (c *Client) resourceCall(ctx context.Context, method, prefix, id, suffix string, in, out any) error {
	if !validRunID(id) {
		return fmt.Errorf("%w: id %q", ErrInvalidRequest, id)
	}
	return c.call(ctx, method, prefix+url.PathEscape(id)+suffix, in, out)
}

// call sends method to the gateway's path (escaped, with its query), in
// as the JSON body unless nil, with retries, and decodes a 2xx answer into
// out unless out is nil.
func (c *Client) call(ctx context.Context, method, path string, in, out any) error {
	_, err := c.callStatus(ctx, method, path, in, out)
	return err
}

// callStatus is call, returning the HTTP status of the 2xx answer of the
// last attempt (0 when it fails).
func (c *Client) callStatus(ctx context.Context, method, path string, in, out any) (int, error) {
	var body []byte
	if in != nil {
		var err error
		if body, err = json.Marshal(in); err != nil {
			return 0, fmt.Errorf("client: encode request: %w", err)
		}
	}
	status := 0
	err := c.withRetries(ctx, func(ctx context.Context) error {
		var r io.Reader = http.NoBody
		if body != nil {
			r = bytes.NewReader(body)
		}
		req, err := http.NewRequestWithContext(ctx, method, c.baseURL+path, r)
		if err != nil {
			return fmt.Errorf("client: build request: %w", err)
		}
		if body != nil {
			req.Header.Set("Content-Type", "application/json")
		}
		status, err = c.doStatus(req, out)
		return err
	})
	if err != nil {
		return 0, err
	}
	return status, nil
}
