package worker

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"slices"
	"strings"

	"github.com/weftrun/weft/pkg/plan"
)

// SecretsProvider resolves secret references to values. Resolve returns
// the value of ref.Key, or an error wrapping ErrSecretNotFound when the key
// does not exist. Its errors may name the key but must never carry a
// value. Implementations must be safe for concurrent use.
type SecretsProvider interface {
	Resolve(ctx context.Context, ref plan.SecretRef) (string, error)
}

// DefaultEnvSecretsPrefix is the prefix of the variables EnvSecrets reads
// when it is given neither a Prefix nor an Allow list.
const DefaultEnvSecretsPrefix = "WEFT_SECRET_"

// EnvSecrets resolves a secret from the worker's environment: the key is
// the variable's name, after Prefix. A plan names the key, so the provider
// is scoped: the zero value reads only variables named
// DefaultEnvSecretsPrefix+key ("WEFT_SECRET_" + key), never the worker's
// own configuration (WEFT_NATS_URL, WEFT_DATABASE_URL) or credentials
// (AWS_*). A key with "=" or NUL in it, or an unset variable, is
// ErrSecretNotFound. Errors name the variable, never its value.
type EnvSecrets struct {
	// Prefix is prepended to every key. Empty means
	// DefaultEnvSecretsPrefix, unless Allow is set.
	Prefix string
	// Allow, when not empty, lists the only keys a plan may name; any
	// other is ErrSecretNotFound. Prefix is still prepended, and may then
	// be empty: EnvSecrets{Allow: []string{"STRIPE_KEY"}} reads
	// STRIPE_KEY and nothing else.
	Allow []string
}

// Resolve returns the value of the environment variable the key names.
func (e EnvSecrets) Resolve(_ context.Context, ref plan.SecretRef) (string, error) {
	name, err := e.variable(ref.Key)
	if err != nil {
		return "", fmt.Errorf("worker: env secret: %w", err)
	}
	v, ok := os.LookupEnv(name)
	if !ok {
		return "", fmt.Errorf("worker: env secret: %s is not set: %w", name, ErrSecretNotFound)
	}
	return v, nil
}

// variable returns the name of the variable key names, or an error
// wrapping ErrSecretNotFound when the provider's scope excludes it.
func (e EnvSecrets) variable(key string) (string, error) {
	switch {
	case key == "":
		return "", fmt.Errorf("empty key: %w", ErrSecretNotFound)
	case strings.ContainsAny(key, "=\x00"):
		return "", fmt.Errorf("key %q is not a variable name: %w", key, ErrSecretNotFound)
	case len(e.Allow) > 0 && !slices.Contains(e.Allow, key):
		return "", fmt.Errorf("key %q is not in the provider's allow list: %w", key, ErrSecretNotFound)
	case len(e.Allow) > 0:
		return e.Prefix + key, nil
	}
	return cmp.Or(e.Prefix, DefaultEnvSecretsPrefix) + key, nil
}

// maxSecretFileBytes bounds a secret file; a larger file is refused.
const maxSecretFileBytes = 64 << 10

// FileSecrets resolves a secret from a file in Dir, as Docker and
// Kubernetes mount them: the key is the file's name. A key must be a plain
// file name: no path separator, not "." or "..", and the file is opened
// through an os.Root, so neither the key nor a symlink can reach outside
// Dir. One trailing newline ("\n" or "\r\n") is dropped. Files over 64 KiB
// are refused.
type FileSecrets struct {
	// Dir is the directory holding one file per secret. Required.
	Dir string
}

// Resolve returns the contents of the file Dir/ref.Key.
func (f FileSecrets) Resolve(_ context.Context, ref plan.SecretRef) (string, error) {
	if err := plainFileName(ref.Key); err != nil {
		return "", fmt.Errorf("worker: file secret: %w", err)
	}
	root, err := os.OpenRoot(f.Dir)
	if err != nil {
		return "", fmt.Errorf("worker: file secret: open the secrets directory: %w", err)
	}
	defer func() { _ = root.Close() }()
	file, err := root.Open(ref.Key)
	if errors.Is(err, fs.ErrNotExist) {
		return "", fmt.Errorf("worker: file secret: %q: %w", ref.Key, ErrSecretNotFound)
	}
	if err != nil {
		return "", fmt.Errorf("worker: file secret: %q: %w", ref.Key, err)
	}
	defer func() { _ = file.Close() }() // read-only
	b, err := io.ReadAll(io.LimitReader(file, maxSecretFileBytes+1))
	if err != nil {
		return "", fmt.Errorf("worker: file secret: read %q: %w", ref.Key, err)
	}
	if len(b) > maxSecretFileBytes {
		return "", fmt.Errorf("worker: file secret: %q is over %d bytes", ref.Key, maxSecretFileBytes)
	}
	s := strings.TrimSuffix(string(b), "\n")
	return strings.TrimSuffix(s, "\r"), nil
}

// plainFileName refuses a key that is not a single path element.
func plainFileName(key string) error {
	switch {
	case key == "", key == ".", key == "..":
		return fmt.Errorf("key %q is not a file name", key)
	case strings.ContainsAny(key, `/\`+"\x00"):
		return fmt.Errorf("key %q contains a path separator", key)
	}
	return nil
}
