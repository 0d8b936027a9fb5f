package readapi

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/weftrun/weft/internal/boot/httpserve"
	"github.com/weftrun/weft/internal/policy/auth"
	"github.com/weftrun/weft/pkg/api"
	"github.com/weftrun/weft/pkg/events"
)

// runView is the answer of GET /v1/runs/{runId}: api.RunView, whose
// LagMs, read from a standby, adds the standby's replay lag at the read
// (Projection.ReadLag). Its plan graph is sent as stored
// (run_snapshots.plan_steps), not decoded and encoded again: Plan shadows
// api.RunView's in the JSON, which is the same document.
type runView struct {
	api.RunView
	Plan rawPlan `json:"plan"`
	// top is the snapshot's top-level steps (RunSnapshot.TopSteps).
	top []events.StepSnapshot
}

// rawPlan is api.RunPlan as run_snapshots.plan_steps stores it.
type rawPlan struct {
	Steps json.RawMessage `json:"steps"`
}

// runGetSQL reads run $1's row, and its snapshot only when the row's
// version (updated_at, last_event_seq) is not the one in $2 and $3, the
// one the snapshot cache holds: an unchanged run's snapshot is neither
// sent by Postgres nor decoded again, whatever its size.
const runGetSQL = `
SELECT tenant_id, project_id, environment_id, plan_id, plan_version,
       CASE WHEN updated_at = $2 AND last_event_seq = $3 THEN NULL ELSE snapshot END,
       coalesce(plan_steps, '[]'), coalesce(gap_seen_seq, 0), gap_since, created_at, updated_at, coalesce(lag_ms, 0),
       last_event_seq
FROM run_snapshots WHERE run_id = $1`

// errNoRun is a run that does not exist for the caller.
var errNoRun = errors.New("no such run")

// runView reads the run's view from the read pool; errNoRun when there is
// none in tenant. Its LagMs adds the read pool's replay lag to the stored
// projection lag. Its snapshot comes from the snapshot cache while the row
// is unchanged (runGetSQL); the view shares it, and its steps, with every
// other reader: they are read, never written.
func (a *API) runView(r *http.Request, runID, tenant string) (runView, error) {
	var v runView
	var snap []byte
	var gapSince *time.Time
	var gapSeen int64
	var ver snapVersion
	var held *time.Time
	var heldSeq *int64
	cached := a.snaps.get(runID)
	if cached != nil {
		held, heldSeq = &cached.version.updatedAt, &cached.version.seq
	}
	err := a.read.QueryRow(r.Context(), runGetSQL, runID, held, heldSeq).Scan(&v.TenantID, &v.ProjectID, &v.EnvironmentID,
		&v.PlanID, &v.PlanVersion, &snap, &v.Plan.Steps, &gapSeen, &gapSince, &v.CreatedAt, &v.UpdatedAt, &v.LagMs, &ver.seq)
	if errors.Is(err, pgx.ErrNoRows) || (err == nil && v.TenantID != tenant) {
		return runView{}, errNoRun // another tenant's run is no run at all
	}
	if err != nil {
		return runView{}, fmt.Errorf("projector: read run %s: %w", runID, err)
	}
	if snap != nil || cached == nil {
		ver.updatedAt = v.UpdatedAt
		if cached, err = decodeSnap(runID, snap, ver); err != nil {
			return runView{}, err
		}
		a.snaps.put(runID, cached)
	}
	v.RunSnapshot, v.top = cached.snap, cached.top
	v.RunID = runID
	v.LagMs += a.feed.ReadLag().Milliseconds()
	if gapSeen > 0 {
		v.Stale = true
		v.Gap = &api.RunGap{AfterSeq: v.LastEventSeq, SeenSeq: gapSeen}
		if gapSince != nil {
			v.Gap.Since = *gapSince
		}
	}
	return v, nil
}

// decodeSnap decodes run runID's stored snapshot, of version ver.
func decodeSnap(runID string, snap []byte, ver snapVersion) (*cachedSnap, error) {
	c := &cachedSnap{version: ver}
	if err := json.Unmarshal(snap, &c.snap); err != nil {
		return nil, fmt.Errorf("projector: decode snapshot of run %s: %w", runID, err)
	}
	c.top = c.snap.TopSteps()
	return c, nil
}

// etag is the view's entity tag: its watermark, and whether it is stale.
func (v runView) etag() string {
	if v.Stale {
		return fmt.Sprintf(`"%d-stale"`, v.LastEventSeq)
	}
	return fmt.Sprintf(`"%d"`, v.LastEventSeq)
}

// handleRunGet answers GET /v1/runs/{runId}, waiting first when asked to
// (waitForSeq, timeout), with the top-level steps (the default) or every
// step (steps=all). An answer of more than Config.StepsPerToken steps
// costs its key more of its rate (chargeSteps).
func (a *API) handleRunGet(w http.ResponseWriter, r *http.Request, p auth.Principal) {
	runID, ok := runIDOf(w, r)
	if !ok {
		return
	}
	wait, err := a.parseWait(r)
	if err != nil {
		writeError(w, http.StatusBadRequest, api.CodeInvalidArgument, err.Error())
		return
	}
	all, err := parseSteps(r)
	if err != nil {
		writeError(w, http.StatusBadRequest, api.CodeInvalidArgument, err.Error())
		return
	}
	if wait.timeout > 0 { // a long poll: one of the key's MaxLongPollsPerKey places
		release, ok := a.longPolls.Acquire(p.KeyID)
		if !ok {
			a.refuse(w, r, p, refusedLongPolls, longPollRetryAfter, fmt.Sprintf(
				"API key %q holds its limit of %d long polls open at once", p.KeyID, a.longPolls.Max()))
			return
		}
		a.metrics.polls.Add(r.Context(), 1)
		defer a.metrics.polls.Add(r.Context(), -1) // after release: the gauge never shows a place still held as free
		defer release()
	}
	v, err := a.waitForRun(r, runID, p.TenantID, wait)
	if !a.runFound(w, r, runID, err) {
		return
	}
	tag := v.etag()
	w.Header().Set("ETag", tag)
	w.Header().Set("Cache-Control", "no-cache")
	if noneMatch(r.Header.Values("If-None-Match"), tag) {
		w.WriteHeader(http.StatusNotModified)
		return
	}
	if !all {
		v.Steps = v.top
	}
	if !a.chargeSteps(w, r, p, len(v.Steps)) {
		return
	}
	httpserve.WriteJSON(w, http.StatusOK, v)
}

// parseSteps reads steps=top (the default) or steps=all. The top view
// leaves out the children of forEach steps, which GET
// /v1/runs/{runId}/steps/{stepId}/children pages through, so that a run
// with 10,000 children does not send them all on every read.
func parseSteps(r *http.Request) (all bool, err error) {
	switch v := r.URL.Query().Get("steps"); v {
	case "", "top":
		return false, nil
	case "all":
		return true, nil
	default:
		return false, fmt.Errorf("steps %q: want top or all", v)
	}
}

// longPollRetryAfter is the Retry-After of a long poll refused for its
// key's cap: about when one of the key's polls may have answered.
const longPollRetryAfter = time.Second

// noneMatch reports whether an If-None-Match header (a list of entity
// tags, or "*") matches tag, by weak comparison (RFC 9110 §13.1.2): W/"7"
// matches "7".
func noneMatch(headers []string, tag string) bool {
	for _, h := range headers {
		for t := range strings.SplitSeq(h, ",") {
			t = strings.TrimPrefix(strings.TrimSpace(t), "W/")
			if t == "*" || t == tag {
				return true
			}
		}
	}
	return false
}

// waitSpec is a long poll's request: until the watermark reaches seq, for
// at most timeout. A zero timeout does not wait.
type waitSpec struct {
	seq     int64
	timeout time.Duration
	// sawStale is the gap state the caller last saw, from the tags of its
	// If-None-Match ("7-stale" is stale); nil without them: the state the
	// first read finds.
	sawStale *bool
}

// parseWait reads waitForSeq and timeout. timeout is a Go duration ("30s")
// or a number of seconds, capped at MaxWait, 30 s by default.
func (a *API) parseWait(r *http.Request) (waitSpec, error) {
	q := r.URL.Query()
	raw, has := q.Get("waitForSeq"), q.Has("waitForSeq")
	if !has {
		if q.Has("timeout") {
			return waitSpec{}, errors.New("timeout needs waitForSeq")
		}
		return waitSpec{}, nil
	}
	seq, err := strconv.ParseInt(raw, 10, 64)
	if err != nil || seq < 0 {
		return waitSpec{}, fmt.Errorf("waitForSeq %q: want a runSeq, a whole number >= 0", raw)
	}
	timeout := min(30*time.Second, a.cfg.MaxWait)
	if t := q.Get("timeout"); t != "" {
		if timeout, err = parseTimeout(t); err != nil {
			return waitSpec{}, err
		}
	}
	return waitSpec{seq: seq, timeout: min(timeout, a.cfg.MaxWait), sawStale: taggedStale(r.Header.Values("If-None-Match"))}, nil
}

// taggedStale reads the gap state the entity tags of an If-None-Match
// header name: nil when there are none, or when they name both states
// (pkg/client sends "7" and "7-stale", and waits for the runSeq alone).
func taggedStale(header []string) *bool {
	var saw *bool
	for _, h := range header {
		for tag := range strings.SplitSeq(h, ",") {
			if tag = strings.TrimSpace(tag); tag == "" || tag == "*" {
				continue
			}
			stale := strings.HasSuffix(tag, `-stale"`)
			if saw != nil && *saw != stale {
				return nil
			}
			saw = &stale
		}
	}
	return saw
}

func parseTimeout(t string) (time.Duration, error) {
	d, err := time.ParseDuration(t)
	if err != nil {
		n, nerr := strconv.ParseUint(t, 10, 32)
		if nerr != nil {
			return 0, fmt.Errorf("timeout %q: want a duration such as 30s", t)
		}
		d = time.Duration(n) * time.Second
	}
	if d < 0 {
		return 0, fmt.Errorf("timeout %q: must not be negative", t)
	}
	return d, nil
}

// waitForRun returns the run's view once its watermark reaches
// wait.seq, its gap state is not the one the caller last saw (from its
// If-None-Match, else the one the first read finds), or wait.timeout
// passes, whichever is first. Until the run exists it waits for that too,
// and answers errNoRun at the timeout. Every commit that changes the run
// wakes it once the read pool shows the commit (Projection.Wait), so the
// reread it wakes to sees the change; it also rereads the run every
// WaitRecheck.
func (a *API) waitForRun(r *http.Request, runID, tenant string, wait waitSpec) (runView, error) {
	deadline := time.Now().Add(wait.timeout)
	first := true
	var initialStale bool
	for {
		changed, stop := a.feed.Wait(runID)
		v, err := a.runView(r, runID, tenant)
		if err != nil && !errors.Is(err, errNoRun) {
			stop()
			return v, err
		}
		found := err == nil
		if first {
			initialStale, first = v.Stale, false
			if wait.sawStale != nil {
				initialStale = *wait.sawStale
			}
		}
		left := time.Until(deadline)
		if wait.timeout == 0 || left <= 0 || (found && (v.LastEventSeq >= wait.seq || v.Stale != initialStale)) {
			stop()
			return v, err
		}
		if k := a.cfg.LongPollWaiting; k != nil {
			k()
		}
		t := time.NewTimer(min(left, a.cfg.WaitRecheck))
		select {
		case <-changed:
		case <-t.C:
		case <-r.Context().Done():
		}
		t.Stop()
		stop()
		if r.Context().Err() != nil {
			return runView{}, r.Context().Err()
		}
	}
}

// runFound reports whether a read of run runID succeeded; when it did not
// (err), it answers 404 for a run the key cannot see (errNoRun), or the
// fault.
func (a *API) runFound(w http.ResponseWriter, r *http.Request, runID string, err error) bool {
	switch {
	case errors.Is(err, errNoRun):
		writeError(w, http.StatusNotFound, api.CodeNotFound, "no run "+runID)
		return false
	case err != nil:
		a.writeFault(w, r, err)
		return false
	}
	return true
}
