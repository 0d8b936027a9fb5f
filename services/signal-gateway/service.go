// Package gateway is Weft's front door: REST, JSON-RPC and NATS ingress for starting runs and sending signals, with authentication, limits and idempotency. The transports arrive with issue #4.
//
// Until then the package holds only the service lifecycle every Weft
// service shares: New builds it, Run blocks until its context ends.
package gateway

import (
	"context"
	"log/slog"
)

// Service is the signal-gateway service.
type Service struct {
	logger *slog.Logger
}

// New returns the service. logger must not be nil.
func New(logger *slog.Logger) *Service {
	return &Service{logger: logger.With("service", "signal-gateway")}
}

// Run blocks until ctx is cancelled and returns nil. It does no work yet.
func (s *Service) Run(ctx context.Context) error {
	s.logger.InfoContext(ctx, "service has no work until its issue lands")
	<-ctx.Done()
	return nil
}
