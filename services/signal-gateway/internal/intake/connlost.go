package intake

import (
	"context"
	"errors"
	"io"
	"net"
	"strings"
	"syscall"

	"github.com/jackc/pgx/v5/pgconn"
)

// ConnectionLost reports whether err is the loss of the database
// connection, or the failure to get one: the server closed it (shut down,
// or its backend was terminated), the network cut it, or no connection
// could be made. A context's end or a timeout is not one: that is the
// caller leaving.
// Whether the lost transaction committed is another question
// (uncommitted).
func ConnectionLost(err error) bool {
	if err == nil || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) || pgconn.Timeout(err) {
		return false
	}
	if _, ok := errors.AsType[*pgconn.ConnectError](err); ok {
		return true
	}
	if pgErr, ok := errors.AsType[*pgconn.PgError](err); ok {
		return connectionClass(pgErr.Code)
	}
	if errors.Is(err, pgconn.ErrConnClosed) || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE) || errors.Is(err, net.ErrClosed) {
		return true
	}
	if _, ok := errors.AsType[*net.OpError](err); ok {
		return true
	}
	return pgconn.SafeToRetry(err)
}

// connectionClass reports whether a server error's SQLSTATE ends the
// connection: class 08 (connection exception), or an operator
// intervention that terminates the backend (57P01 admin_shutdown,
// 57P02 crash_shutdown, 57P03 cannot_connect_now).
func connectionClass(code string) bool {
	return strings.HasPrefix(code, "08") || code == "57P01" || code == "57P02" || code == "57P03"
}

// uncommitted reports whether a transaction that failed with err provably
// committed nothing: nothing of the failing statement reached the server
// (pgconn.SafeToRetry: a connection that could not be made, or a write
// that never went out), or the failure came before the transaction's
// COMMIT was sent, so the server rolled it back with the connection.
func uncommitted(err error, commitSent bool) bool {
	if _, ok := errors.AsType[*pgconn.ConnectError](err); ok {
		return true
	}
	return pgconn.SafeToRetry(err) || !commitSent
}

// retryable reports whether a write that failed with err should be tried
// once more, on another connection: its connection was lost, it provably
// committed nothing, and its caller is still waiting.
func retryable(ctx context.Context, err error, commitSent bool) bool {
	return ctx.Err() == nil && ConnectionLost(err) && uncommitted(err, commitSent)
}
