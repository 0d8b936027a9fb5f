package round

import (
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"sync"

	"github.com/weftrun/weft/pkg/events"
	"github.com/weftrun/weft/pkg/plan"
	"github.com/weftrun/weft/services/engine/internal/decide"
)

// approval is what a run's RunApproved carries that every round needs.
type approval struct {
	plan                *decide.Prepared
	tenant, environment string
}

// approvedHead is what planOf reads of a RunApproved's payload
// (events.RunApprovedData): the fold reads the rest.
type approvedHead struct {
	TenantID      string          `json:"tenantId"`
	EnvironmentID string          `json:"environmentId"`
	Plan          json.RawMessage `json:"plan"`
}

// planCache holds the runs' approvals, by the RunApproved's event id, and
// the plans they carry, decoded and prepared (decide.Prepare), by the
// SHA-256 of their documents: the runs of one plan share one prepared
// plan, so a run's first round decodes its RunApproved's payload but not
// its plan, which costs more than the round's own work, its rounds decide
// without working out again what depends on the plan alone, and a later
// round of the run, cold, decodes neither.
// An approval never changes once appended, and a plan is a function of its
// document. The plans are shared and read only. The documents of the
// plans held are bounded by plan.DefaultCacheBytes; a cache that would go
// over it starts over. Safe for concurrent use.
type planCache struct {
	runs memo[approval]

	mu    sync.Mutex
	plans map[[sha256.Size]byte]*decide.Prepared
	bytes int
}

// planOf returns the approval carried by the run's RunApproved, its first
// event in evs, from the cache or decoded. The plan was validated when the
// run was approved; it is decoded leniently here so a plan written by a
// newer version still loads.
func (c *planCache) planOf(runID string, evs []events.Event) (approval, error) {
	if len(evs) == 0 || evs[0].EventType != events.RunApproved {
		return approval{}, fmt.Errorf("%w: %s has no RunApproved", ErrUnknownRun, runID)
	}
	key := evs[0].EventID
	if a, ok := c.runs.get(key); ok {
		return a, nil
	}
	var head approvedHead
	if err := evs[0].Data(&head); err != nil {
		return approval{}, fmt.Errorf("%w: %s: %w", ErrUnknownRun, runID, err)
	}
	p, err := c.plan(head.Plan)
	if err != nil {
		return approval{}, fmt.Errorf("%w: %s: RunApproved carries no readable plan: %w", ErrUnknownRun, runID, err)
	}
	a := approval{plan: p, tenant: head.TenantID, environment: head.EnvironmentID}
	c.runs.put(key, a)
	return a, nil
}

// plan returns the plan of doc, prepared, from the cache or decoded.
func (c *planCache) plan(doc json.RawMessage) (*decide.Prepared, error) {
	sum := sha256.Sum256(doc)
	c.mu.Lock()
	pp, ok := c.plans[sum]
	c.mu.Unlock()
	if ok {
		return pp, nil
	}
	var p plan.Plan
	if err := json.Unmarshal(doc, &p); err != nil {
		return nil, err
	}
	p.ApplyDefaults()
	pp = decide.Prepare(&p)
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.plans == nil || c.bytes+len(doc) > plan.DefaultCacheBytes {
		c.plans, c.bytes = map[[sha256.Size]byte]*decide.Prepared{}, 0
	}
	if q, ok := c.plans[sum]; ok {
		return q, nil // another round decoded it meanwhile: share one
	}
	if len(doc) <= plan.DefaultCacheBytes {
		c.plans[sum], c.bytes = pp, c.bytes+len(doc)
	}
	return pp, nil
}
