package intake

import (
	"context"
	"encoding/json"

	"github.com/weftrun/weft/internal/policy/auth"
	"github.com/weftrun/weft/pkg/api"
)

// PlanResolver resolves the planRef of a start: it returns req with
// PlanRef replaced by the plan of the registered version it names, and
// PlanID and PlanVersion set to that version's when empty, or refuses with
// an *intake.Error (InvalidArgument for both plan and planRef or an empty
// member, NotFound for an unknown version, PlanArchived for an archived
// one). It authorizes p as a start of req would.
type PlanResolver interface {
	ResolvePlan(ctx context.Context, p auth.Principal, req api.StartRunRequest) (api.StartRunRequest, error)
}

// ResolvePlan returns start with the plan its planRef names, as p may
// start it (plans.ResolvePlan); a start without a planRef is returned as
// it is, and one with a planRef is refused when plans is nil (a gateway
// that keeps no registered plans).
func ResolvePlan(ctx context.Context, plans PlanResolver, p auth.Principal, start api.StartRunRequest) (api.StartRunRequest, error) {
	switch {
	case start.PlanRef == nil:
		return start, nil
	case plans == nil:
		return start, Invalid("planRef", "is not served: this gateway keeps no registered plans")
	}
	return plans.ResolvePlan(ctx, p, start)
}

// NullJSON is doc as an SQL argument: SQL NULL when it is absent (a
// schedule or trigger by planRef stores no plan).
func NullJSON(doc json.RawMessage) any {
	if len(doc) == 0 {
		return nil
	}
	return doc
}

// RefID and RefVersion are ref's members as SQL arguments, SQL NULL
// without a ref.
func RefID(ref *api.PlanRef) any {
	if ref == nil {
		return nil
	}
	return ref.PlanID
}

// RefVersion is the planVersion of ref as RefID is its planId.
func RefVersion(ref *api.PlanRef) any {
	if ref == nil {
		return nil
	}
	return ref.PlanVersion
}
