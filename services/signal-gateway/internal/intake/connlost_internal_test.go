package intake

import (
	"context"
	"errors"
	"fmt"
	"io"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/stretchr/testify/require"
)

// notSentError is an error of a write that never went out, as pgconn marks it.
type notSentError struct{}

func (notSentError) Error() string     { return "write failed before sending" }
func (notSentError) SafeToRetry() bool { return true }

func TestConnectionLostAndRetryable(t *testing.T) {
	t.Parallel()
	terminated := fmt.Errorf("intake: claim run request: %w", &pgconn.PgError{Severity: "FATAL", Code: "57P01"})
	canceled, cancel := context.WithCancel(context.Background())
	cancel()
	for _, c := range []struct {
		name       string
		err        error
		lost       bool
		commitSent bool
		ctx        context.Context
		retry      bool
	}{
		{"backend terminated before the commit", terminated, true, false, context.Background(), true},
		{"backend terminated once the commit was sent", terminated, true, true, context.Background(), false},
		{"nothing sent, commit batch", notSentError{}, true, true, context.Background(), true},
		{"connection closed", fmt.Errorf("x: %w", io.ErrUnexpectedEOF), true, false, context.Background(), true},
		{"no connection to be had", &pgconn.ConnectError{}, true, true, context.Background(), true},
		{"connection exception class", &pgconn.PgError{Code: "08006"}, true, false, context.Background(), true},
		{"caller left", terminated, true, false, canceled, false},
		{"unique violation", &pgconn.PgError{Code: "23505"}, false, false, context.Background(), false},
		{"context canceled", context.Canceled, false, false, context.Background(), false},
		{"a refusal", &Error{Code: "InvalidArgument"}, false, false, context.Background(), false},
		{"plain fault", errors.New("boom"), false, false, context.Background(), false},
	} {
		require.Equal(t, c.lost, ConnectionLost(c.err), "%s: lost", c.name)
		require.Equal(t, c.retry, retryable(c.ctx, c.err, c.commitSent), "%s: retry", c.name)
	}
}
