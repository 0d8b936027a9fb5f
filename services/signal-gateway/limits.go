package gateway

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/weftrun/weft/internal/policy/auth"
	"github.com/weftrun/weft/pkg/api"
	"github.com/weftrun/weft/services/signal-gateway/internal/intake"
)

// authenticate returns the principal of a request's Authorization values
// (auth.Keys.AuthenticateValues). It refuses more than one value with
// CodeInvalidArgument and any other failure with CodeUnauthenticated.
func (s *Service) authenticate(values []string) (auth.Principal, error) {
	p, err := s.cfg.Keys.AuthenticateValues(values)
	switch {
	case errors.Is(err, auth.ErrMultipleCredentials):
		return auth.Principal{}, &intake.Error{Code: api.CodeInvalidArgument, Message: err.Error()}
	case err != nil:
		return auth.Principal{}, &intake.Error{Code: api.CodeUnauthenticated, Message: err.Error()}
	}
	return p, nil
}

// limitKey charges p's key n requests of Config.KeyRate. It refuses with
// CodeRateLimited, whose RetryAfter is when the key's bucket will hold n,
// when it holds fewer now; a refused request takes nothing from it.
func (s *Service) limitKey(p auth.Principal, n int) error {
	ok, wait := s.keyRate.Allow(p.TenantID+"\x00"+p.KeyID, n)
	if ok {
		return nil
	}
	lim := s.keyRate.Limit()
	e := &intake.Error{Code: api.CodeRateLimited, RetryAfter: wait, Limit: intake.LimitKeyRate,
		Message: fmt.Sprintf("API key %s is past its rate of %g requests/s (burst %d)", p.KeyID, lim.Rate, lim.Burst),
		Details: map[string]any{"keyId": p.KeyID, "rate": lim.Rate, "burst": lim.Burst}}
	e.Details["retryAfter"] = e.RetryAfterSeconds()
	return e
}

// rpcCalls is what a JSON-RPC body costs against Config.KeyRate: the
// number of elements of a batch, 1 for anything else (a single call, or
// a body that is not JSON, refused later at no further cost).
func rpcCalls(body []byte) int {
	trimmed := bytes.TrimLeft(body, " \t\r\n")
	if len(trimmed) == 0 || trimmed[0] != '[' {
		return 1
	}
	var elems []json.RawMessage
	if err := json.Unmarshal(trimmed, &elems); err != nil {
		return 1
	}
	return max(len(elems), 1)
}

// countLimit counts, in weft.gateway.limit.refusals, a refusal by a named
// limit (intake.Error.Limit) sent over transport.
func (s *Service) countLimit(ctx context.Context, transport string, e *intake.Error) {
	if m := s.metrics; m != nil && e.Limit != "" {
		m.refusals.Add(ctx, 1, m.limitOpts[[2]string{e.Limit, transport}])
	}
}
