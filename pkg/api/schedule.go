package api

import (
	"encoding/json"
	"time"
)

// Misfire policies: what a schedule does with fire times that passed while
// no scheduler fired them (a scheduler down, the schedule paused); see
// docs/schedules.md.
const (
	// MisfireSkip drops missed fire times; the next run is at the next
	// future fire time. The default.
	MisfireSkip = "skip"
	// MisfireCatchup replays the missed fire times, oldest first, up to the
	// schedule's MaxCatchup runs: the newest MaxCatchup are kept, older ones
	// are skipped with reason SkipCatchupLimit.
	MisfireCatchup = "catchup"
	// MisfireCompress starts one run for every fire time that came due,
	// with the window it covers (FireWindow) in its input's
	// schedule.window.
	MisfireCompress = "compress"
)

// Overlap policies: what a schedule does with a fire time that comes due
// while the run it started last is still active.
const (
	// OverlapSkip drops the fire (reason SkipOverlap). The default.
	OverlapSkip = "skip"
	// OverlapBufferOne keeps the fire, at most one, and starts it once the
	// previous run has ended; further fires meanwhile are skipped.
	OverlapBufferOne = "buffer-one"
	// OverlapAllow starts the run anyway.
	OverlapAllow = "allow"
	// OverlapCancelPrevious sends the previous run a CANCEL signal, then
	// starts the new run.
	OverlapCancelPrevious = "cancel-previous"
)

// Reasons a fire time did not start a run, as counted in SkipCounts and
// the weft.gateway.schedule.skipped metric.
const (
	SkipMisfire      = "misfire"       // dropped by the skip misfire policy
	SkipOverlap      = "overlap"       // dropped by the skip or buffer-one overlap policy
	SkipCatchupLimit = "catchup_limit" // older than the newest MaxCatchup missed fire times
	SkipRefused      = "refused"       // the gateway refused the start (the plan breaks a limit, say)
)

// Limits and defaults of schedules and triggers, named so callers can
// check before sending.
const (
	// MaxScheduleIDBytes and MaxTriggerIDBytes bound the ids, so that
	// "{scheduleId}:{scheduledFor}" and "{triggerId}:{eventId}" fit a
	// runRequestId (128 bytes). Neither may contain ':'.
	MaxScheduleIDBytes = 64
	MaxTriggerIDBytes  = 64
	// MaxEventIDBytes bounds a trigger event's eventId.
	MaxEventIDBytes = 63
	// MaxCronBytes bounds a cron expression.
	MaxCronBytes = 128
	// MaxTimezoneBytes bounds a timezone name.
	MaxTimezoneBytes = 64
	// DefaultMaxCatchup is a schedule's MaxCatchup when it sets none.
	DefaultMaxCatchup = 10
	// DefaultTimezone is a schedule's Timezone when it sets none.
	DefaultTimezone = "UTC"
)

// ScheduleRequest creates a schedule (POST /v1/schedules, JSON-RPC
// schedule.create) or replaces one's definition (PUT
// /v1/schedules/{scheduleId}, schedule.update).
type ScheduleRequest struct {
	// ScheduleID names the schedule within its tenant: an id (no '.', '*',
	// '>', whitespace, leading '$') without ':', at most
	// MaxScheduleIDBytes. Optional on create (the gateway generates a
	// UUIDv7; the Go client always sends one, so retries are idempotent);
	// on update it is empty or the path's.
	ScheduleID    string `json:"scheduleId,omitempty"`
	TenantID      string `json:"tenantId"`
	ProjectID     string `json:"projectId"`
	EnvironmentID string `json:"environmentId"`
	// Cron is a five-field cron expression (minute hour day-of-month
	// month day-of-week), evaluated in Timezone.
	Cron string `json:"cron"`
	// Timezone is an IANA zone name ("Europe/Paris"); default "UTC".
	Timezone string `json:"timezone,omitempty"`
	// Plan is the plan each fire starts a run of. A schedule carries its
	// plan, or names a registered version in PlanRef, not both.
	Plan json.RawMessage `json:"plan,omitempty"`
	// PlanRef names the registered plan version each fire starts a run
	// of. It must resolve when the schedule is created or updated, and is
	// resolved again at each fire: PlanVersionLatest starts the newest
	// version not archived at the fire time, and a fire whose version is
	// archived or gone starts nothing (a skip with reason SkipRefused).
	PlanRef *PlanRef `json:"planRef,omitempty"`
	// Input is the base of every run's input: a JSON object, or none,
	// without the keys a fire sets (FireKeyScheduledFor, FireKeySchedule); each fire
	// adds them (ScheduleFireInput).
	Input json.RawMessage `json:"input,omitempty"`
	// MisfirePolicy is skip (default), catchup or compress.
	MisfirePolicy string `json:"misfirePolicy,omitempty"`
	// MaxCatchup bounds a catch-up; default DefaultMaxCatchup.
	MaxCatchup int `json:"maxCatchup,omitempty"`
	// OverlapPolicy is skip (default), buffer-one, allow or
	// cancel-previous.
	OverlapPolicy string `json:"overlapPolicy,omitempty"`
	// Paused creates the schedule paused; on update nil keeps its state.
	Paused *bool `json:"paused,omitempty"`
	// Labels are the labels of every run the schedule starts (CheckLabels
	// holds them to its limits); on update they replace the old ones.
	Labels map[string]string `json:"labels,omitempty"`
	// Priority is the admission priority of every run the schedule starts
	// (StartRunRequest.Priority); zero means DefaultPriority.
	Priority int `json:"priority,omitempty"`
}

// Schedule is a schedule as the gateway holds it: its definition and what
// it has done.
type Schedule struct {
	ScheduleID    string `json:"scheduleId"`
	TenantID      string `json:"tenantId"`
	ProjectID     string `json:"projectId"`
	EnvironmentID string `json:"environmentId"`
	Cron          string `json:"cron"`
	Timezone      string `json:"timezone"`
	// PlanID and PlanVersion name the plan each fire starts: the plan's
	// own, or PlanRef's (PlanVersion may then be PlanVersionLatest).
	PlanID      string `json:"planId"`
	PlanVersion string `json:"planVersion"`
	// PlanRef is set when the schedule names a registered version; Plan
	// then is absent.
	PlanRef *PlanRef `json:"planRef,omitempty"`
	// Plan and Input are left out of lists.
	Plan  json.RawMessage `json:"plan,omitempty"`
	Input json.RawMessage `json:"input,omitempty"`
	// Labels are the labels of every run the schedule starts, and
	// Priority their admission priority (zero: DefaultPriority).
	Labels        map[string]string `json:"labels,omitempty"`
	Priority      int               `json:"priority,omitempty"`
	MisfirePolicy string            `json:"misfirePolicy"`
	MaxCatchup    int               `json:"maxCatchup"`
	OverlapPolicy string            `json:"overlapPolicy"`
	Paused        bool              `json:"paused"`
	// NextFireAt is the earliest fire time not yet handled; nil when the
	// expression has no fire time left.
	NextFireAt *time.Time `json:"nextFireAt,omitempty"`
	// LastFireAt is the fire time of the last run the schedule started,
	// LastRunID that run.
	LastFireAt *time.Time `json:"lastFireAt,omitempty"`
	LastRunID  string     `json:"lastRunId,omitempty"`
	// BufferedFireAt is the fire time buffer-one holds until the last run
	// ends.
	BufferedFireAt *time.Time `json:"bufferedFireAt,omitempty"`
	// Skipped counts the fire times that started no run, by reason.
	Skipped SkipCounts `json:"skipped"`
	// RecentSkips are the latest skips, newest last (at most 50).
	RecentSkips []SkippedFires `json:"recentSkips"`
	CreatedAt   time.Time      `json:"createdAt"`
	UpdatedAt   time.Time      `json:"updatedAt"`
}

// SkipCounts counts a schedule's skipped fire times by reason.
type SkipCounts struct {
	Misfire      int64 `json:"misfire"`
	Overlap      int64 `json:"overlap"`
	CatchupLimit int64 `json:"catchupLimit"`
	Refused      int64 `json:"refused"`
}

// SkippedFires records fire times that started no run: Count fire times
// from From to To (equal for one), for Reason (a Skip… constant). It is
// stored in schedules.recent_skips (docs/persisted-format.md).
type SkippedFires struct {
	Reason     string    `json:"reason"`
	From       time.Time `json:"from"`
	To         time.Time `json:"to"`
	Count      int64     `json:"count"`
	RecordedAt time.Time `json:"recordedAt"`
	// Message says why a start was refused (reason refused only).
	Message string `json:"message,omitempty"`
}

// ScheduleList is a page of schedules (GET /v1/schedules), ordered by
// scheduleId. NextCursor, when set, fetches the next page.
type ScheduleList struct {
	Schedules  []Schedule `json:"schedules"`
	NextCursor string     `json:"nextCursor,omitempty"`
}

// FireWindow is the span of fire times one compressed run covers: every
// fire time from From to To, MissedCount of which were missed.
type FireWindow struct {
	From        time.Time `json:"from"`
	To          time.Time `json:"to"`
	MissedCount int       `json:"missedCount"`
}

// ScheduleFireInput is what a schedule's fire sets in the input of the
// run it starts: the input is the schedule's own input (a JSON object, or
// none) with these two keys set, the fire's values winning over any the
// schedule's input holds (docs/schedules.md, "The run's input"). Its run
// request id is "{scheduleId}:{scheduledFor in RFC 3339 UTC}".
type ScheduleFireInput struct {
	// ScheduledFor is the fire time, RFC 3339 in UTC.
	ScheduledFor time.Time `json:"scheduledFor"`
	// Schedule names the schedule that fired.
	Schedule FiredSchedule `json:"schedule"`
}

// FiredSchedule is the "schedule" key of a fire's run input.
type FiredSchedule struct {
	ID string `json:"id"`
	// Window is set for a compressed fire: the fire times the run covers.
	Window *FireWindow `json:"window,omitempty"`
}

// The keys of a run's input that a fire sets (ScheduleFireInput): a
// schedule's input may not hold them.
const (
	FireKeyScheduledFor = "scheduledFor"
	FireKeySchedule     = "schedule"
)

// ScheduledRunInput is the input that older builds gave the runs their
// schedules started: the schedule's input under "input". No
// build writes it now; it is kept so that the inputs recorded in those
// runs' RunApproved keep being read (docs/persisted-format.md).
type ScheduledRunInput struct {
	ScheduleID   string          `json:"scheduleId"`
	ScheduledFor time.Time       `json:"scheduledFor"`
	Window       *FireWindow     `json:"window,omitempty"`
	Input        json.RawMessage `json:"input,omitempty"`
}

// TriggerRequest creates a trigger (POST /v1/triggers, trigger.create): a
// name events are sent to, and the plan each new event starts a run of.
type TriggerRequest struct {
	// TriggerID follows ScheduleID's rules (MaxTriggerIDBytes); it is a
	// NATS subject token too. Optional: the gateway generates a UUIDv7.
	TriggerID     string `json:"triggerId,omitempty"`
	TenantID      string `json:"tenantId"`
	ProjectID     string `json:"projectId"`
	EnvironmentID string `json:"environmentId"`
	// Plan is the plan each event starts a run of. A trigger carries its
	// plan, or names a registered version in PlanRef, not both.
	Plan json.RawMessage `json:"plan,omitempty"`
	// PlanRef names the registered plan version each event starts a run
	// of. It must resolve when the trigger is created, and is resolved
	// again for each event: PlanVersionLatest starts the newest version
	// not archived then, and an event whose version is archived is
	// refused with CodePlanArchived and starts nothing.
	PlanRef *PlanRef `json:"planRef,omitempty"`
	// Input, when set, is a CEL expression (bare or as one "${{ EXPR }}",
	// at most 4 KiB) over event, a TriggerInputEvent, whose JSON value is
	// the input of each run an event starts; it is compiled and
	// type-checked at create. Without it the event's payload is the run's
	// input.
	Input string `json:"input,omitempty"`
	// Labels are the labels of every run the trigger starts (CheckLabels
	// holds them to its limits).
	Labels map[string]string `json:"labels,omitempty"`
	// Priority is the admission priority of every run the trigger starts
	// (StartRunRequest.Priority); zero means DefaultPriority.
	Priority int `json:"priority,omitempty"`
}

// Trigger is a trigger as the gateway holds it.
type Trigger struct {
	TriggerID     string `json:"triggerId"`
	TenantID      string `json:"tenantId"`
	ProjectID     string `json:"projectId"`
	EnvironmentID string `json:"environmentId"`
	// PlanID and PlanVersion name the plan each event starts: the plan's
	// own, or PlanRef's (PlanVersion may then be PlanVersionLatest).
	PlanID      string `json:"planId"`
	PlanVersion string `json:"planVersion"`
	// PlanRef is set when the trigger names a registered version; Plan
	// then is absent.
	PlanRef *PlanRef `json:"planRef,omitempty"`
	// Plan is left out of lists.
	Plan json.RawMessage `json:"plan,omitempty"`
	// Input is the trigger's input expression, if it has one.
	Input string `json:"input,omitempty"`
	// Labels are the labels of every run the trigger starts, and
	// Priority their admission priority (zero: DefaultPriority).
	Labels    map[string]string `json:"labels,omitempty"`
	Priority  int               `json:"priority,omitempty"`
	CreatedAt time.Time         `json:"createdAt"`
	// RefusedEvents counts the events the trigger refused, and
	// RecentRefusals are the last MaxTriggerRefusals of them, newest
	// first: what a refused event, which starts nothing, leaves.
	RefusedEvents  int64          `json:"refusedEvents"`
	RecentRefusals []RefusedEvent `json:"recentRefusals"`
}

// MaxTriggerRefusals is how many refused events a trigger keeps.
const MaxTriggerRefusals = 50

// RefusedEvent is an event a trigger refused: its id, the refusal's code
// and message, and when.
type RefusedEvent struct {
	EventID string    `json:"eventId"`
	Code    string    `json:"code"`
	Message string    `json:"message"`
	At      time.Time `json:"at"`
}

// TriggerList is a page of triggers (GET /v1/triggers), ordered by
// triggerId.
type TriggerList struct {
	Triggers   []Trigger `json:"triggers"`
	NextCursor string    `json:"nextCursor,omitempty"`
}

// TriggerEvent is an event sent to a trigger (POST
// /v1/triggers/{triggerId}/events, a NATS publish to
// weft.triggers.<triggerId>).
type TriggerEvent struct {
	// EventID is the event's stable id: a redelivery with the same id
	// starts nothing and returns the first run. Optional: the gateway
	// assigns one and returns it. At most MaxEventIDBytes, no whitespace
	// or control characters.
	EventID string `json:"eventId,omitempty"`
	// Payload is the event, any JSON value.
	Payload json.RawMessage `json:"payload,omitempty"`
}

// TriggerEventResult answers an event: the run it started (201) or, for a
// redelivery, the run the first delivery started (200, Duplicate).
type TriggerEventResult struct {
	TriggerID string `json:"triggerId"`
	EventID   string `json:"eventId"`
	StartRunResult
}

// TriggerInputEvent is the variable event a trigger's input expression
// reads: the event and the trigger it was sent to. It holds no clock, so
// an event's run input depends on the event alone.
type TriggerInputEvent struct {
	ID        string `json:"id"`
	TriggerID string `json:"triggerId"`
	// Payload is the event's payload, null when it has none.
	Payload json.RawMessage `json:"payload"`
}

// TriggeredRunInput is the input that older builds gave the runs their
// trigger events started; its run request id was, as now,
// "{triggerId}:{eventId}". No build writes it now; it is kept so that the
// inputs recorded in those runs' RunApproved keep being read
// (docs/persisted-format.md).
type TriggeredRunInput struct {
	TriggerID string          `json:"triggerId"`
	EventID   string          `json:"eventId"`
	Payload   json.RawMessage `json:"payload,omitempty"`
}
