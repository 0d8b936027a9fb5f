package worker_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/weftrun/weft/pkg/plan"
	"github.com/weftrun/weft/pkg/task"
	"github.com/weftrun/weft/pkg/worker"
)

// The attack of issue #17 (item 11): a tenant's plan names a key another
// tenant's secret is stored under. With TenantSecrets the worker resolves
// each task's references with its own tenant's provider only.
func TestTenantSecretsScopeByTaskTenant(t *testing.T) {
	t.Parallel()
	b := setup(t)
	acme, globex := t.TempDir(), t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(acme, "db-password"), []byte("acme-Secret-4411"), 0o600))
	require.NoError(t, os.WriteFile(filepath.Join(globex, "api-token"), []byte("globex-Secret-9032"), 0o600))

	b.startWorker(t, nil, worker.Config{Concurrency: 2}, func(w *worker.Worker) {
		require.NoError(t, w.Register("resolve", func(ctx context.Context, in worker.Input) (worker.Output, error) {
			v, err := in.Secret(ctx, "s")
			if err != nil {
				return worker.Output{}, err
			}
			return worker.NewOutput(map[string]int{"length": len(v), "tenantLength": len(in.TenantID)})
		}))
	}, worker.WithSecretsProvider("", worker.TenantSecrets{
		"acme":   worker.FileSecrets{Dir: acme},
		"globex": worker.FileSecrets{Dir: globex},
	}))

	run := func(tenant, key string) task.Result {
		tk := newTask("resolve", "")
		tk.TenantID = tenant
		tk.Secrets = []plan.SecretRef{{Name: "s", Key: key}}
		results := b.results(t, tk.RunID)
		publishTask(t, b.js, tk)
		return results.final()
	}

	r := run("acme", "db-password")
	require.Equal(t, task.Completed, r.Kind, r.Error)
	require.JSONEq(t, `{"length": 16, "tenantLength": 4}`, string(r.Output))

	for _, attack := range []struct{ tenant, key string }{
		{"globex", "db-password"}, // another tenant's key
		{"", "db-password"},       // a task without a tenant
		{"initech", "api-token"},  // a tenant with no secrets here
	} {
		r = run(attack.tenant, attack.key)
		require.Equal(t, task.Failed, r.Kind, attack)
		require.Contains(t, r.Error.Message, worker.ErrSecretNotFound.Error(), attack)
		require.NotContains(t, b.allResults(t), "Secret-")
	}
}

func TestTenantFromContextOnlyInResolve(t *testing.T) {
	t.Parallel()
	_, ok := worker.TenantFromContext(t.Context())
	require.False(t, ok)
	_, err := worker.TenantSecrets{"acme": worker.EnvSecrets{}}.Resolve(t.Context(), plan.SecretRef{Name: "s", Key: "K"})
	require.ErrorIs(t, err, worker.ErrSecretNotFound)
}
