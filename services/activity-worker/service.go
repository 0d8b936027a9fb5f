// Package worker is a runnable worker process that executes activities pulled from weft.tasks.<queue> and reports results. The worker SDK and the demo activities arrive with issue #3.
//
// Until then the package holds only the service lifecycle every Weft
// service shares: New builds it, Run blocks until its context ends.
package worker

import (
	"context"
	"log/slog"
)

// Service is the activity-worker service.
type Service struct {
	logger *slog.Logger
}

// New returns the service. logger must not be nil.
func New(logger *slog.Logger) *Service {
	return &Service{logger: logger.With("service", "activity-worker")}
}

// Run blocks until ctx is cancelled and returns nil. It does no work yet.
func (s *Service) Run(ctx context.Context) error {
	s.logger.InfoContext(ctx, "service has no work until its issue lands")
	<-ctx.Done()
	return nil
}
