package round

import (
	"encoding/json"
	"fmt"

	"github.com/weftrun/weft/pkg/events"
	"github.com/weftrun/weft/pkg/plan"
)

// approval is what a run's RunApproved carries that every round needs.
type approval struct {
	plan *plan.Plan
	data events.RunApprovedData
}

// planCache holds the decoded approvals of runs, by the RunApproved's
// event id. An approval never changes once appended, so a decoded one
// stands for every later round of its run; decoding a large plan in every
// round cost more than the round's own work. The plans are shared and
// read only. Safe for concurrent use.
type planCache struct{ memo[approval] }

// planOf returns the plan and the approval carried by the run's
// RunApproved, its first event in evs, from the cache or decoded. The plan
// was validated when the run was approved; it is decoded leniently here so
// a plan written by a newer version still loads.
func (c *planCache) planOf(runID string, evs []events.Event) (*plan.Plan, events.RunApprovedData, error) {
	if len(evs) == 0 || evs[0].EventType != events.RunApproved {
		return nil, events.RunApprovedData{}, fmt.Errorf("%w: %s has no RunApproved", ErrUnknownRun, runID)
	}
	key := evs[0].EventID
	a, ok := c.get(key)
	if ok {
		return a.plan, a.data, nil
	}
	if err := evs[0].Data(&a.data); err != nil {
		return nil, a.data, fmt.Errorf("%w: %s: %w", ErrUnknownRun, runID, err)
	}
	var p plan.Plan
	if err := json.Unmarshal(a.data.Plan, &p); err != nil {
		return nil, a.data, fmt.Errorf("%w: %s: RunApproved carries no readable plan: %w", ErrUnknownRun, runID, err)
	}
	p.ApplyDefaults()
	a.plan = &p
	c.put(key, a)
	return a.plan, a.data, nil
}
