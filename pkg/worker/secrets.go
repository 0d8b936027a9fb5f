package worker

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
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

// EnvSecrets resolves a secret from the worker's environment: the key is
// the variable's name, after Prefix. With a prefix such as "WEFT_SECRET_",
// a plan can reach only the variables the operator meant to share. The
// zero value reads any variable. An unset variable is ErrSecretNotFound.
type EnvSecrets struct {
	// Prefix is prepended to every key.
	Prefix string
}

// Resolve returns the value of the environment variable Prefix+ref.Key.
func (e EnvSecrets) Resolve(_ context.Context, ref plan.SecretRef) (string, error) {
	if ref.Key == "" {
		return "", fmt.Errorf("worker: env secret: empty key: %w", ErrSecretNotFound)
	}
	v, ok := os.LookupEnv(e.Prefix + ref.Key)
	if !ok {
		return "", fmt.Errorf("worker: env secret: %s%s is not set: %w", e.Prefix, ref.Key, ErrSecretNotFound)
	}
	return v, nil
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
