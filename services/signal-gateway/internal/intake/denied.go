package intake

import (
	"fmt"

	"github.com/weftrun/weft/internal/policy/auth"
	"github.com/weftrun/weft/pkg/api"
)

// Denied is the CodePermissionDenied refusal of the action d denied p on
// a resource of tenant. When tenant is not the key's own, the message and
// details name both (details.tenantId, the request's; details.keyTenantId,
// the key's; details.keyId), so a caller sees which tenant its key can
// act in instead of a bare "tenant mismatch". A key's
// tenant is no secret from the key's holder. Otherwise the message is d's
// Reason.
func Denied(p auth.Principal, tenant string, d auth.Decision) *Error {
	if p.TenantID == "" || p.TenantID == tenant {
		return &Error{Code: api.CodePermissionDenied, Message: d.Reason}
	}
	return &Error{Code: api.CodePermissionDenied,
		Message: fmt.Sprintf("tenant mismatch: the API key %q acts in tenant %q, and the request names tenant %q", p.KeyID, p.TenantID, tenant),
		Details: map[string]any{"tenantId": tenant, "keyTenantId": p.TenantID, "keyId": p.KeyID}}
}
