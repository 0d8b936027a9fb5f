package api

import (
	"time"

	"github.com/weftrun/weft/pkg/events"
)

// The read API's wire types (docs/read-api.md): the answers of the
// projector's GET /v1/runs, GET /v1/runs/{runId} and
// GET /v1/runs/{runId}/events. They mirror the projector's JSON field for
// field, so pkg/client can decode them without importing the service.

// StatusStale is the status filter of GET /v1/runs that selects runs with
// an open runSeq gap, whatever their status.
const StatusStale = "STALE"

// RunIdentity names a run's tenant, project, environment and plan, as its
// RunApproved recorded them.
type RunIdentity struct {
	TenantID      string `json:"tenantId"`
	ProjectID     string `json:"projectId"`
	EnvironmentID string `json:"environmentId"`
	PlanID        string `json:"planId"`
	PlanVersion   string `json:"planVersion"`
}

// RunView is the answer of GET /v1/runs/{runId}: the run's snapshot
// (execution-semantics §1.4, events.RunSnapshot) and what the projector
// knows about it. Its entity tag is LastEventSeq, with "-stale" while
// Stale.
type RunView struct {
	events.RunSnapshot
	// Stale reports an open runSeq gap: the snapshot stops before it.
	Stale bool `json:"stale"`
	// Gap describes the gap while Stale; nil otherwise.
	Gap *RunGap `json:"gap,omitempty"`
	RunIdentity
	CreatedAt time.Time `json:"createdAt"`
	UpdatedAt time.Time `json:"updatedAt"`
	// LagMs is the projection lag of the last event applied: applied time
	// minus persistedAt, 0 before any.
	LagMs int64 `json:"lagMs"`
	// Plan is the run's plan graph, so steps that have not started yet can
	// be shown.
	Plan RunPlan `json:"plan"`
}

// StepsTotal is the number of the plan's steps, or of the steps the
// snapshot has seen when that is more (a plan the projector could not
// read), a forEach step counted once.
func (v *RunView) StepsTotal() int { return max(len(v.Plan.Steps), len(v.TopSteps())) }

// RunGap describes an open gap: AfterSeq is the last runSeq applied,
// SeenSeq the runSeq seen past the gap, Since when it was detected.
type RunGap struct {
	AfterSeq int64     `json:"afterSeq"`
	SeenSeq  int64     `json:"seenSeq"`
	Since    time.Time `json:"since"`
}

// RunPlan is a run's plan graph, its steps in declaration order.
type RunPlan struct {
	Steps []PlanStep `json:"steps"`
}

// PlanStep is one step of a run's plan graph.
type PlanStep struct {
	ID string `json:"id"`
	// Kind is "activity", "waitSignal" or "subPlan".
	Kind string `json:"kind,omitempty"`
	// Activity is set on activity steps.
	Activity string `json:"activity,omitempty"`
	// Signal is the name a waitSignal step waits for.
	Signal    string   `json:"signal,omitempty"`
	DependsOn []string `json:"dependsOn"`
}

// RunSummary is one row of GET /v1/runs.
type RunSummary struct {
	RunID string `json:"runId"`
	RunIdentity
	Status          events.RunStatus `json:"status"`
	Stale           bool             `json:"stale"`
	CreatedAt       time.Time        `json:"createdAt"`
	StartedAt       *time.Time       `json:"startedAt"`
	CompletedAt     *time.Time       `json:"completedAt"`
	TotalDurationMs *int64           `json:"totalDurationMs"`
	UpdatedAt       time.Time        `json:"updatedAt"`
	LastEventSeq    int64            `json:"lastEventSeq"`
	// StepsTotal counts the plan's steps; StepsDone those whose status is
	// SUCCESS or SKIPPED; FailedSteps those whose status is FAILED.
	StepsTotal  int `json:"stepsTotal"`
	StepsDone   int `json:"stepsDone"`
	FailedSteps int `json:"failedSteps"`
	// RunRequestID is the run's run request id ("{triggerId}:{eventId}"
	// for a run a trigger started); empty until the projector has recorded
	// it (a run an older build projected, before a rebuild pass).
	RunRequestID string `json:"runRequestId"`
	// ParentRunID is, on a child run (one a subPlan step started), its
	// parent's run id; empty on any other run, and on a child until the
	// projector has recorded it (a run an older build projected, before a
	// rebuild pass). The run's view carries the whole link (parent).
	ParentRunID string `json:"parentRunId,omitempty"`
	// RerunOf is, on a rerun, the run it reruns; empty on any other run.
	RerunOf string `json:"rerunOf,omitempty"`
	// Labels are the run's labels (StartRunRequest.Labels); absent when it
	// has none.
	Labels map[string]string `json:"labels,omitempty"`
}

// ChildPage is the answer of GET /v1/runs/{runId}/steps/{stepId}/children:
// one page of a forEach step's children (its elements' steps).
type ChildPage struct {
	// Children are the children's snapshots, in element order, with an
	// index above the request's afterIndex. A child not yet scheduled has
	// no snapshot and is not listed.
	Children []events.StepSnapshot `json:"children"`
	// More says whether a later page lists more children.
	More bool `json:"more"`
	// NextAfterIndex is the element index of the last child listed (the
	// request's afterIndex when none are): the next page's afterIndex.
	NextAfterIndex int `json:"nextAfterIndex"`
}

// RunList is the answer of GET /v1/runs: runs newest first (by approval
// time, then run id).
type RunList struct {
	Runs []RunSummary `json:"runs"`
	// NextCursor is the cursor of the next page; empty on the last one.
	NextCursor string `json:"nextCursor,omitempty"`
}

// EventPage is the answer of GET /v1/runs/{runId}/events: canonical
// envelopes from the run's event log, in runSeq order.
type EventPage struct {
	Events []events.Event `json:"events"`
	// NextAfterSeq is the afterSeq of the next page: the last runSeq
	// returned, or the request's afterSeq when none was.
	NextAfterSeq int64 `json:"nextAfterSeq"`
	// More reports whether the log held more events when it was read.
	More bool `json:"more"`
}
