package bench

import (
	"context"
	"testing"
	"time"

	"github.com/weftrun/weft/pkg/api"
)

// planRefRuns is how many runs each closed loop of BenchmarkStartByPlanRef
// starts.
const planRefRuns = 2000

// BenchmarkStartByPlanRef is issue #39's figure: a start by planRef costs
// no more than a start that carries its plan. On one `weft dev` stack,
// systemPlan is registered (POST /v1/plans), then closed loops of
// planRefRuns runs start it, each way in turn, from systemClients clients:
//
//   - plan: every start carries the plan, as BenchmarkSystem's do;
//   - ref: every start names it, planRef {system3, 1};
//   - latest: every start names planRef {system3, latest}.
//
// Each reports runs/s, the gateway's answer p99 (start_p99_ms) and the
// share of the insert ceiling measured before, as BenchmarkSystem does.
func BenchmarkStartByPlanRef(b *testing.B) {
	s := startDevStack(b, nil)
	ceiling := insertCeiling(b, s.db, 3*time.Second)
	if _, _, err := s.client.PushPlan(context.Background(), api.PlanPushRequest{ProjectID: "bench", Plan: systemPlan.doc}); err != nil {
		b.Fatal(err)
	}
	for _, way := range []struct {
		name string
		ref  *api.PlanRef
	}{
		{"plan", nil},
		{"ref", &api.PlanRef{PlanID: systemPlan.id, PlanVersion: "1"}},
		{"latest", &api.PlanRef{PlanID: systemPlan.id, PlanVersion: api.PlanVersionLatest}},
	} {
		p := benchPlan{id: systemPlan.id, doc: systemPlan.doc, ref: way.ref}
		b.Run(way.name, func(b *testing.B) {
			for range b.N {
				s.closedLoop(b, p, planRefRuns, systemClients).report(b, s, ceiling)
			}
		})
	}
}
