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
