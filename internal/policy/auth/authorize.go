package auth

import (
	"context"
	"fmt"
)

// Role bounds what a Principal may do within its tenant.
type Role string

// The roles, from least to most privileged.
const (
	// RoleViewer may only read runs.
	RoleViewer Role = "viewer"
	// RoleOperator may read and start runs and send signals.
	RoleOperator Role = "operator"
	// RoleAdmin may perform every action.
	RoleAdmin Role = "admin"
)

// ParseRole returns the Role spelled exactly s ("viewer", "operator" or
// "admin", lowercase), or an error for any other string.
func ParseRole(s string) (Role, error) {
	r := Role(s)
	if !r.valid() {
		return "", fmt.Errorf("auth: unknown role %q (want viewer, operator or admin)", s)
	}
	return r, nil
}

func (r Role) valid() bool {
	switch r {
	case RoleViewer, RoleOperator, RoleAdmin:
		return true
	default:
		return false
	}
}

// allows reports whether r permits a. Unknown roles and actions permit nothing.
func (r Role) allows(a Action) bool {
	if !a.valid() {
		return false
	}
	switch r {
	case RoleAdmin:
		return true
	case RoleOperator:
		return a == ActionRunRead || a == ActionRunStart || a == ActionSignalSend
	case RoleViewer:
		return a == ActionRunRead
	default:
		return false
	}
}

// Principal is an authenticated caller. It holds no secret and may be logged.
type Principal struct {
	// KeyID names the key that authenticated the caller: the key's configured
	// name. It is not secret and is meant for logs and audit events.
	KeyID string
	// TenantID is the tenant the key belongs to; the caller acts only there.
	TenantID string
	// Role bounds the caller's actions.
	Role Role
}

// Action is something a Principal asks to do.
type Action string

// The actions the gateway authorizes.
const (
	// ActionRunStart starts a run.
	ActionRunStart Action = "run.start"
	// ActionSignalSend sends a signal to a run.
	ActionSignalSend Action = "signal.send"
	// ActionRunRead reads a run's state or history.
	ActionRunRead Action = "run.read"
	// ActionAdmin covers administrative operations.
	ActionAdmin Action = "admin"
)

func (a Action) valid() bool {
	switch a {
	case ActionRunStart, ActionSignalSend, ActionRunRead, ActionAdmin:
		return true
	default:
		return false
	}
}

// describe returns the action as the predicate of a denial reason.
func (a Action) describe() string {
	switch a {
	case ActionRunStart:
		return "start runs"
	case ActionSignalSend:
		return "send signals"
	case ActionRunRead:
		return "read runs"
	case ActionAdmin:
		return "perform admin actions"
	default:
		return "perform this action"
	}
}

// Resource is what an Action applies to. TenantID must always be set; RunID
// and SignalName are set where the action has them.
type Resource struct {
	TenantID   string
	RunID      string
	SignalName string
}

// Decision is an Authorizer's answer.
type Decision struct {
	// Allowed is true only when the action may proceed.
	Allowed bool
	// Reason says why the action was denied, e.g. `role "viewer" may not send
	// signals`; it is empty when Allowed. The gateway puts it into a
	// SignalRejected event and the 403 response, so it never holds a secret.
	Reason string
}

// Authorizer decides whether a Principal may perform an Action on a Resource.
// It is the IAuthorization.
//
// Authorize must be safe for concurrent use. It returns no error: an
// implementation that cannot decide (say, a policy service is unreachable)
// must deny, with a Reason that says so. The gateway calls it only with a
// Principal that Keys.Authenticate produced.
type Authorizer interface {
	Authorize(ctx context.Context, p Principal, a Action, r Resource) Decision
}

// RoleAuthorizer is the default Authorizer. It denies any action on a
// resource of another tenant (Reason "tenant mismatch"), including for
// admins, and then allows by role: viewer may run.read; operator may run.read,
// run.start and signal.send; admin may do every action. An unknown role or
// action is denied. The zero value is ready to use and safe for concurrent use.
type RoleAuthorizer struct{}

var _ Authorizer = RoleAuthorizer{}

// Authorize implements Authorizer. It does no I/O and ignores ctx.
func (RoleAuthorizer) Authorize(_ context.Context, p Principal, a Action, r Resource) Decision {
	switch {
	case p.TenantID == "":
		return deny("principal has no tenant")
	case r.TenantID != p.TenantID:
		return deny("tenant mismatch")
	case !p.Role.valid():
		return deny("unknown role")
	case !a.valid():
		return deny("unknown action")
	case !p.Role.allows(a):
		return deny(fmt.Sprintf("role %q may not %s", p.Role, a.describe()))
	default:
		return Decision{Allowed: true}
	}
}

func deny(reason string) Decision {
	return Decision{Reason: reason}
}
