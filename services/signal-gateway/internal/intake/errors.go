package intake

import (
	"fmt"
	"maps"
	"strings"
	"time"

	"github.com/weftrun/weft/pkg/api"
	"github.com/weftrun/weft/pkg/plan"
)

// Error is a refusal: the request was not taken in and nothing of it was
// persisted, except where Code says otherwise (a denied signal is recorded
// as SignalRejected). Code is a pkg/api error code.
type Error struct {
	Code    string
	Message string
	Details map[string]any
	// RetryAfter is set for CodeRateLimited and CodeOverloaded.
	RetryAfter time.Duration
	// Denial says, for the refusal of a signal its principal may not
	// send, whether it was recorded (DenialRecorded, DenialUnrecorded,
	// DenialRateLimited); empty for every other refusal. It is not sent
	// to the caller.
	Denial string
	// Limit names the gateway limit that refused the request
	// (LimitKeyRate, LimitScheduleQuota, LimitTriggerQuota), for the
	// gateway's weft.gateway.limit.refusals; empty for every other
	// refusal. It is not sent to the caller.
	Limit string
}

// The named limits an Error.Limit reports.
const (
	// LimitKeyRate: the API key's request rate (Config.KeyRate).
	LimitKeyRate = "key_rate"
	// LimitScheduleQuota: the tenant's quota of schedules.
	LimitScheduleQuota = "schedule_quota"
	// LimitTriggerQuota: the tenant's quota of triggers.
	LimitTriggerQuota = "trigger_quota"
)

// QuotaExceeded is the refusal of a create past a tenant's quota of
// resource ("schedules" or "triggers"), a CodeQuotaExceeded whose Limit
// is limit.
func QuotaExceeded(limit, resource, tenant string, quota int) *Error {
	return &Error{Code: api.CodeQuotaExceeded, Limit: limit,
		Message: fmt.Sprintf("tenant %s has %d %s, its quota: delete one before creating another, or ask the operator to raise the quota", tenant, quota, resource),
		Details: map[string]any{"tenantId": tenant, "resource": resource, "limit": quota}}
}

func (e *Error) Error() string { return e.Code + ": " + e.Message }

// API returns the error in its wire shape.
func (e *Error) API() api.Error {
	return api.Error{Code: e.Code, Message: e.Message, Details: maps.Clone(e.Details)}
}

// invalid returns a CodeInvalidArgument error about field, whose
// details.problems holds its one problem (api.ProblemInvalid), as those
// of requests with several fields at fault (Problems) do.
func invalid(field, format string, args ...any) *Error {
	return Problems([]api.Problem{problem(field, api.ProblemInvalid, fmt.Sprintf(format, args...))})
}

// notFound is the answer for a run that does not exist or belongs to
// another tenant: the two are indistinguishable, so run ids cannot be
// probed across tenants.
func notFound(runID string) *Error {
	return &Error{Code: api.CodeNotFound, Message: fmt.Sprintf("run %s not found", runID),
		Details: map[string]any{"runId": runID}}
}

// RetryAfterSeconds is RetryAfter rounded up to whole seconds, at least
// 1, as Retry-After headers and details.retryAfter count.
func (e *Error) RetryAfterSeconds() int { return retryAfterSeconds(e.RetryAfter) }

func retryAfterSeconds(d time.Duration) int {
	return max(1, int((d+time.Second-1)/time.Second))
}

// Invalid returns a CodeInvalidArgument error about field, for the
// gateway's other request checkers (schedules, triggers).
func Invalid(field, format string, args ...any) *Error { return invalid(field, format, args...) }

// CheckResourceID refuses, as an InvalidArgument about field, an id of a
// schedule or trigger that breaks the id rules (plan.CheckID: it may
// become a NATS subject token), holds a ':' (it is the first component of
// a run request id, "{id}:{…}"), or is longer than maxBytes.
func CheckResourceID(field, id string, maxBytes int) error {
	if err := plan.CheckID(id, maxBytes); err != nil {
		return invalid(field, "%v", err)
	}
	if strings.Contains(id, ":") {
		return invalid(field, "must not contain ':' (it separates the parts of a run request id)")
	}
	return nil
}
