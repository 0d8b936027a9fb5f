package worker

import (
	"context"
	"fmt"

	"github.com/weftrun/weft/pkg/plan"
)

// tenantKey is the context key of the tenant whose task resolves a secret.
type tenantKey struct{}

// TenantFromContext returns the tenant of the run whose task asks a
// SecretsProvider for a secret: the worker puts it on the context it
// passes to Resolve. ok is false outside a Resolve call, and the tenant is
// empty for a task from an engine that predates tenants on tasks.
func TenantFromContext(ctx context.Context) (tenant string, ok bool) {
	tenant, ok = ctx.Value(tenantKey{}).(string)
	return tenant, ok
}

// TenantSecrets scopes secrets by tenant: it resolves a reference with the
// provider registered for the tenant of the task that asks, so a plan of
// one tenant cannot name another tenant's secrets, whatever key it names
// and whichever queue it chose. A task of a tenant with no entry, or with
// no tenant at all, gets ErrSecretNotFound. Register it like any other
// provider:
//
//	worker.WithSecretsProvider("", worker.TenantSecrets{
//		"acme":   worker.FileSecrets{Dir: "/run/secrets/acme"},
//		"globex": worker.EnvSecrets{Prefix: "GLOBEX_"},
//	})
//
// It is safe for concurrent use when its providers are, and must not be
// modified once the worker has started.
type TenantSecrets map[string]SecretsProvider

// Resolve returns the value of ref from the provider of the task's tenant.
func (t TenantSecrets) Resolve(ctx context.Context, ref plan.SecretRef) (string, error) {
	tenant, _ := TenantFromContext(ctx)
	p, ok := t[tenant]
	if tenant == "" || !ok || p == nil {
		return "", fmt.Errorf("worker: tenant secret: tenant %q has no secrets here: %w", tenant, ErrSecretNotFound)
	}
	v, err := p.Resolve(ctx, ref)
	if err != nil {
		return "", fmt.Errorf("worker: tenant secret of %q: %w", tenant, err)
	}
	return v, nil
}
