package auth

import "context"

// principalKey is the context key under which WithPrincipal stores a Principal.
type principalKey struct{}

// WithPrincipal returns a copy of ctx carrying p, for handlers downstream of
// authentication to read back with PrincipalFrom.
func WithPrincipal(ctx context.Context, p Principal) context.Context {
	return context.WithValue(ctx, principalKey{}, p)
}

// PrincipalFrom returns the Principal stored by WithPrincipal and true, or the
// zero Principal and false when ctx carries none.
func PrincipalFrom(ctx context.Context) (Principal, bool) {
	p, ok := ctx.Value(principalKey{}).(Principal)
	return p, ok
}
