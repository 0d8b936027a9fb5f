package planversions

import (
	"context"
	"errors"

	"github.com/weftrun/weft/pkg/api"
)

// ErrNotFound reports a planRef whose plan or version is not registered.
var ErrNotFound = errors.New("planversions: not registered")

// ArchivedError reports a planRef that names an archived version, or
// "latest" of a plan whose every version is archived (AllArchived).
type ArchivedError struct {
	Key         Key
	AllArchived bool
}

func (e *ArchivedError) Error() string {
	if e.AllArchived {
		return "plan " + e.Key.PlanID + " has no version that is not archived"
	}
	return e.Key.PlanID + "@" + e.Key.PlanVersion + " is archived"
}

// Resolve returns, with its plan, the version k names: k.PlanVersion
// api.PlanVersionLatest is the newest not archived. An unknown version,
// or a plan without versions, is ErrNotFound; an archived version, or
// "latest" of a plan whose every version is archived, an *ArchivedError.
func Resolve(ctx context.Context, q Querier, k Key) (*Record, error) {
	if k.PlanVersion != api.PlanVersionLatest {
		r, err := Get(ctx, q, k)
		switch {
		case err != nil:
			return nil, err
		case r == nil:
			return nil, ErrNotFound
		case r.ArchivedAt != nil:
			return nil, &ArchivedError{Key: k}
		}
		return r, nil
	}
	r, err := Latest(ctx, q, k)
	if err != nil || r != nil {
		return r, err
	}
	rs, err := OfPlan(ctx, q, k)
	if err != nil {
		return nil, err
	}
	if len(rs) == 0 {
		return nil, ErrNotFound
	}
	return nil, &ArchivedError{Key: k, AllArchived: true}
}
