// Package engine drives runs: it consumes RunApproved and SignalAccepted events and worker results, and runs each message as one atomic round (load, decide, append with compare-and-swap, enqueue follow-up work, commit, ack). The decider and the round loop arrive with issue #3.
//
// Until then the package holds only the service lifecycle every Weft
// service shares: New builds it, Run blocks until its context ends.
package engine

import (
	"context"
	"log/slog"
)

// Service is the engine service.
type Service struct {
	logger *slog.Logger
}

// New returns the service. logger must not be nil.
func New(logger *slog.Logger) *Service {
	return &Service{logger: logger.With("service", "engine")}
}

// Run blocks until ctx is cancelled and returns nil. It does no work yet.
func (s *Service) Run(ctx context.Context) error {
	s.logger.InfoContext(ctx, "service has no work until its issue lands")
	<-ctx.Done()
	return nil
}
