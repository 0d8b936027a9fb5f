package readapi

import (
	"net/http"

	"github.com/weftrun/weft/internal/boot/httpserve"
	"github.com/weftrun/weft/internal/policy/auth"
)

// Whoami is the answer of GET /v1/whoami: the caller's key, tenant and
// role, and the actions its Authorizer allows it on its tenant. The UI
// shows only what the key may do (it offers pause, resume and delete of
// schedules to a key with run.start); the gateway still decides each
// request.
type Whoami struct {
	KeyID    string `json:"keyId"`
	TenantID string `json:"tenantId"`
	Role     string `json:"role"`
	// Actions are the actions allowed, of run.read, run.start,
	// signal.send and admin, in that order.
	Actions []string `json:"actions"`
}

// whoamiActions are the actions Whoami asks the Authorizer about.
var whoamiActions = []auth.Action{auth.ActionRunRead, auth.ActionRunStart, auth.ActionSignalSend, auth.ActionAdmin}

// handleWhoami answers GET /v1/whoami.
func (a *API) handleWhoami(w http.ResponseWriter, r *http.Request, p auth.Principal) {
	out := Whoami{KeyID: p.KeyID, TenantID: p.TenantID, Role: string(p.Role), Actions: []string{}}
	for _, act := range whoamiActions {
		if a.cfg.Authorizer.Authorize(r.Context(), p, act, auth.Resource{TenantID: p.TenantID}).Allowed {
			out.Actions = append(out.Actions, string(act))
		}
	}
	httpserve.WriteJSON(w, http.StatusOK, out)
}
