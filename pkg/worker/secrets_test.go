package worker_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/weftrun/weft/pkg/plan"
	"github.com/weftrun/weft/pkg/task"
	"github.com/weftrun/weft/pkg/worker"
)

const (
	envSecret  = "env-Secret-Value-7f3a"
	fileSecret = `file"Secret\Value-91c2` // has characters JSON escapes
)

// Not parallel: it sets an environment variable.
func TestSecretsNeverLeak(t *testing.T) {
	b := setup(t)
	t.Setenv("WEFTTEST_API_TOKEN", envSecret)
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "db-password"), []byte(fileSecret+"\n"), 0o600))

	b.startWorker(t, nil, worker.Config{Concurrency: 8}, func(w *worker.Worker) {
		require.NoError(t, w.Register("use", useSecrets))
		require.NoError(t, w.Register("leak-error", func(ctx context.Context, in worker.Input) (worker.Output, error) {
			v, err := in.Secret(ctx, "db")
			if err != nil {
				return worker.Output{}, err
			}
			return worker.Output{}, fmt.Errorf("login with %q failed", v)
		}))
		require.NoError(t, w.Register("leak-output", func(ctx context.Context, in worker.Input) (worker.Output, error) {
			v, err := in.Secret(ctx, "db")
			if err != nil {
				return worker.Output{}, err
			}
			return worker.NewOutput(map[string]string{"password": v})
		}))
		require.NoError(t, w.Register("leak-panic", func(ctx context.Context, in worker.Input) (worker.Output, error) {
			v, _ := in.Secret(ctx, "api")
			panic("token " + v)
		}))
		require.NoError(t, w.Register("resolve", func(ctx context.Context, in worker.Input) (worker.Output, error) {
			var name string
			if err := in.Decode(&name); err != nil {
				return worker.Output{}, err
			}
			_, err := in.Secret(ctx, name)
			return worker.Output{}, err
		}))
	}, worker.WithSecretsProvider("env", worker.EnvSecrets{Prefix: "WEFTTEST_"}),
		worker.WithSecretsProvider("", worker.FileSecrets{Dir: dir}))

	refs := []plan.SecretRef{
		{Name: "api", Provider: "env", Key: "API_TOKEN"},
		{Name: "db", Key: "db-password"}, // the default provider: files
		{Name: "vault", Provider: "vault", Key: "x"},
		{Name: "gone", Provider: "env", Key: "UNSET_VARIABLE"},
	}
	run := func(activity, input string) task.Result {
		tk := newTask(activity, input)
		tk.Secrets = refs
		results := b.results(t, tk.RunID)
		publishTask(t, b.js, tk)
		return results.final()
	}

	r := run("use", `{"token": {"secretRef": "api"}}`)
	require.Equal(t, task.Completed, r.Kind, r.Error)
	require.JSONEq(t, `{"ok": true}`, string(r.Output))

	r = run("leak-error", "")
	require.Equal(t, worker.CodeActivityError, r.Error.Code)
	require.Contains(t, r.Error.Message, "login with")
	require.Contains(t, r.Error.Message, "[REDACTED]")

	r = run("leak-output", "")
	require.Equal(t, worker.CodeSecretInOutput, r.Error.Code)
	require.False(t, r.Error.Retryable)

	r = run("leak-panic", "")
	require.Equal(t, "activity panicked: token [REDACTED]", r.Error.Message)

	for name, want := range map[string]error{
		"nope": worker.ErrUnknownSecret, "vault": worker.ErrNoSecretsProvider, "gone": worker.ErrSecretNotFound,
	} {
		r = run("resolve", `"`+name+`"`)
		require.Equal(t, worker.CodeActivityError, r.Error.Code, name)
		require.Contains(t, r.Error.Message, want.Error(), name)
	}

	published, logs := b.allResults(t), b.logs.String()
	require.Contains(t, logs, "[REDACTED]", "the panic is logged, redacted")
	for _, secret := range []string{envSecret, fileSecret, `file\"Secret\\Value-91c2`} {
		require.NotContains(t, published, secret)
		require.NotContains(t, logs, secret)
	}
}

// useSecrets checks every way to resolve a secret and reports whether the
// values were right, never the values.
func useSecrets(ctx context.Context, in worker.Input) (worker.Output, error) {
	api, err := in.Secret(ctx, "api")
	if err != nil {
		return worker.Output{}, err
	}
	db, err := in.Secret(ctx, "db")
	if err != nil {
		return worker.Output{}, err
	}
	again, err := in.Secret(ctx, "db")
	if err != nil {
		return worker.Output{}, err
	}
	if api != envSecret || db != fileSecret || again != db {
		return worker.Output{}, errors.New("wrong secret values")
	}
	return worker.NewOutput(map[string]bool{"ok": true})
}

func TestFileSecrets(t *testing.T) {
	t.Parallel()
	parent := t.TempDir()
	dir := filepath.Join(parent, "secrets")
	require.NoError(t, os.Mkdir(dir, 0o700))
	require.NoError(t, os.WriteFile(filepath.Join(parent, "outside"), []byte("outside-value"), 0o600))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "crlf"), []byte("v\r\n"), 0o600))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "big"), make([]byte, 65<<10), 0o600))
	require.NoError(t, os.Symlink(filepath.Join(parent, "outside"), filepath.Join(dir, "link")))
	p := worker.FileSecrets{Dir: dir}
	ctx := t.Context()

	v, err := p.Resolve(ctx, plan.SecretRef{Name: "c", Key: "crlf"})
	require.NoError(t, err)
	require.Equal(t, "v", v)

	_, err = p.Resolve(ctx, plan.SecretRef{Name: "m", Key: "missing"})
	require.ErrorIs(t, err, worker.ErrSecretNotFound)
	for _, key := range []string{"../outside", "..", ".", "", "sub/x", `..\outside`, "link", "big", "/etc/passwd"} {
		v, err := p.Resolve(ctx, plan.SecretRef{Name: "x", Key: key})
		require.Error(t, err, "key %q", key)
		require.Empty(t, v)
		require.NotContains(t, err.Error(), "outside-value")
	}
}

func TestEnvSecrets(t *testing.T) {
	t.Parallel()
	_, err := worker.EnvSecrets{Prefix: "WEFTTEST_NEVER_SET_"}.Resolve(t.Context(), plan.SecretRef{Name: "x", Key: "X"})
	require.ErrorIs(t, err, worker.ErrSecretNotFound)
	_, err = worker.EnvSecrets{}.Resolve(t.Context(), plan.SecretRef{Name: "x"})
	require.ErrorIs(t, err, worker.ErrSecretNotFound)
}

// TestEnvSecretsScope is issue 17's finding 11: a plan names the key, so
// the zero-value provider must not read the worker's own configuration or
// credentials by their names.
func TestEnvSecretsScope(t *testing.T) { //nolint:paralleltest // t.Setenv
	t.Setenv("WEFT_DATABASE_URL", "postgres://weft:db-password@db/weft")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "aws-secret-value")
	t.Setenv(worker.DefaultEnvSecretsPrefix+"TOKEN", "token-value")
	t.Setenv("WEFTTEST_SHARED", "shared-value")
	ctx := t.Context()
	resolve := func(p worker.EnvSecrets, key string) (string, error) {
		return p.Resolve(ctx, plan.SecretRef{Name: "s", Key: key})
	}

	v, err := resolve(worker.EnvSecrets{}, "TOKEN")
	require.NoError(t, err)
	require.Equal(t, "token-value", v)
	for _, key := range []string{"WEFT_DATABASE_URL", "AWS_SECRET_ACCESS_KEY", "TOKEN=", "=", "TOKEN\x00", "../TOKEN"} {
		v, err := resolve(worker.EnvSecrets{}, key)
		require.ErrorIs(t, err, worker.ErrSecretNotFound, "key %q", key)
		require.Empty(t, v)
		require.NotContains(t, err.Error(), "password")
		require.NotContains(t, err.Error(), "aws-secret-value")
	}

	// An allow list names the only keys a plan may use, with no prefix.
	shared := worker.EnvSecrets{Allow: []string{"WEFTTEST_SHARED"}}
	v, err = resolve(shared, "WEFTTEST_SHARED")
	require.NoError(t, err)
	require.Equal(t, "shared-value", v)
	for _, key := range []string{"WEFT_DATABASE_URL", "AWS_SECRET_ACCESS_KEY", "TOKEN", worker.DefaultEnvSecretsPrefix + "TOKEN"} {
		_, err := resolve(shared, key)
		require.ErrorIs(t, err, worker.ErrSecretNotFound, "key %q", key)
	}

	// An explicit prefix replaces the default one.
	_, err = resolve(worker.EnvSecrets{Prefix: "WEFTTEST_"}, "TOKEN")
	require.ErrorIs(t, err, worker.ErrSecretNotFound)
	v, err = resolve(worker.EnvSecrets{Prefix: "WEFTTEST_"}, "SHARED")
	require.NoError(t, err)
	require.Equal(t, "shared-value", v)
}
