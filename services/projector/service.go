// Package projector reduces each run's events, in runSeq order, into a RunSnapshot stored with its watermark, halts a run on a runSeq gap and serves the read API and the UI. The consumer, the read API and the UI arrive with issue #5.
//
// Until then the package holds only the service lifecycle every Weft
// service shares: New builds it, Run blocks until its context ends.
package projector

import (
	"context"
	"log/slog"
)

// Service is the projector service.
type Service struct {
	logger *slog.Logger
}

// New returns the service. logger must not be nil.
func New(logger *slog.Logger) *Service {
	return &Service{logger: logger.With("service", "projector")}
}

// Run blocks until ctx is cancelled and returns nil. It does no work yet.
func (s *Service) Run(ctx context.Context) error {
	s.logger.InfoContext(ctx, "service has no work until its issue lands")
	<-ctx.Done()
	return nil
}
