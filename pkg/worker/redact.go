package worker

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"

	"github.com/weftrun/weft/pkg/plan"
)

// redacted replaces a secret value found in a failure message.
const redacted = "[REDACTED]"

// minRedactBytes is the shortest secret value searched for in messages and
// outputs: shorter values would match ordinary text everywhere.
const minRedactBytes = 4

// secretSet resolves the secrets of one attempt and remembers the values,
// so the worker can keep them out of the attempt's result.
type secretSet struct {
	tenant    string
	refs      []plan.SecretRef
	providers map[string]SecretsProvider

	mu     sync.Mutex
	values map[string]string // by secret name
}

func newSecretSet(tenant string, refs []plan.SecretRef, providers map[string]SecretsProvider) *secretSet {
	return &secretSet{tenant: tenant, refs: refs, providers: providers, values: make(map[string]string)}
}

// resolve returns the value of the secret called name, from the cache or
// its provider.
func (s *secretSet) resolve(ctx context.Context, name string) (string, error) {
	s.mu.Lock()
	v, ok := s.values[name]
	s.mu.Unlock()
	if ok {
		return v, nil
	}
	ref, ok := s.ref(name)
	if !ok {
		return "", fmt.Errorf("%w: %q", ErrUnknownSecret, name)
	}
	p, ok := s.providers[ref.Provider]
	if !ok {
		return "", fmt.Errorf("%w: secret %q names provider %q", ErrNoSecretsProvider, name, ref.Provider)
	}
	v, err := p.Resolve(context.WithValue(ctx, tenantKey{}, s.tenant), ref)
	if err != nil {
		return "", fmt.Errorf("worker: secret %q: %w", name, err)
	}
	s.mu.Lock()
	s.values[name] = v
	s.mu.Unlock()
	return v, nil
}

func (s *secretSet) ref(name string) (plan.SecretRef, bool) {
	for _, r := range s.refs {
		if r.Name == name {
			return r, true
		}
	}
	return plan.SecretRef{}, false
}

// searchable returns the resolved values long enough to search for, each
// also in its JSON-escaped form, the way it would appear inside a JSON
// string.
func (s *secretSet) searchable() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for _, v := range s.values {
		if len(v) < minRedactBytes {
			continue
		}
		out = append(out, v)
		if b, err := json.Marshal(v); err == nil {
			if esc := string(b[1 : len(b)-1]); esc != v {
				out = append(out, esc)
			}
		}
	}
	return out
}

// redact replaces every resolved secret value in msg.
func (s *secretSet) redact(msg string) string {
	for _, v := range s.searchable() {
		msg = strings.ReplaceAll(msg, v, redacted)
	}
	return msg
}

// leaks reports whether b contains a resolved secret value.
func (s *secretSet) leaks(b []byte) bool {
	for _, v := range s.searchable() {
		if bytes.Contains(b, []byte(v)) {
			return true
		}
	}
	return false
}
