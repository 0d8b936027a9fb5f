// Package auth authenticates signal-gateway callers by API key and decides
// what they may do.
//
// A caller presents "Authorization: Bearer <token>". Keys.Authenticate hashes
// the token with SHA-256 and looks the digest up among the configured keys;
// a match yields a Principal: the key's name, its tenant and its role
// (viewer, operator or admin). Configuration holds only digests
// ("sha256:<hex>", see HashKey and ParseKeys), never the tokens themselves.
//
// An Authorizer then decides whether a Principal may perform an Action on a
// Resource. RoleAuthorizer is the default: a principal acts only within its
// own tenant, and its role bounds the actions. The gateway, not this package,
// records a denial as SignalRejected and answers 403, and answers 401 to a
// request that fails authentication.
//
// GenerateToken and LoadOrCreateDevToken give `weft dev` a local token.
package auth
