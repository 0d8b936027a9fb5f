// Package keylimit caps what one API key may ask of a service: a request
// rate (Limiter, a token bucket per key) and a number of requests in
// flight at once (Concurrency, e.g. long polls). Both are safe for
// concurrent use and hold memory only for keys seen recently: a service
// authenticates a caller, then asks Allow or Acquire with the key's id
// before it does any work or writes anything, and refuses the request in
// its transport's own shape (HTTP 429 with Retry-After) when told no.
package keylimit
