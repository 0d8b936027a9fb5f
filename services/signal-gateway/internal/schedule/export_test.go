package schedule

import "context"

// Claim and FireClaimed expose the two halves of a poll, so tests can
// stop a scheduler between them as a crash would.
func (s *Service) Claim(ctx context.Context) ([]Key, string, error) { return s.claim(ctx) }

func (s *Service) FireClaimed(ctx context.Context, k Key, token string) (bool, error) {
	return s.fire(ctx, k, token)
}
