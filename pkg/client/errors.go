package client

import (
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/http"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/weftrun/weft/pkg/api"
)

// Sentinel errors. Each is wrapped by the errors that report it, so callers
// can test with errors.Is.
var (
	// ErrInvalidConfig is wrapped by every error New returns for a bad base
	// URL or option.
	ErrInvalidConfig = errors.New("client: invalid config")
	// ErrInvalidRequest is wrapped by the errors a call returns for a
	// request it refuses before sending anything (an empty runID or
	// schedule id, say). Such a request is never sent, so it is never retried.
	ErrInvalidRequest = errors.New("client: invalid request")
	// ErrUnexpectedResponse is wrapped by the error returned when the
	// gateway answered 2xx with a body that is not the expected JSON or is
	// larger than MaxResponseBytes. The request may have taken effect; it
	// is not retried.
	ErrUnexpectedResponse = errors.New("client: unexpected response")
	// ErrNoReadURL is wrapped by the error of every read call (GetRun,
	// WaitRun, ListRuns, Runs, RunEvents, Step, StepChildren) of a Client
	// built without WithReadURL. Nothing is sent.
	ErrNoReadURL = errors.New("client: no read API URL: build the Client with WithReadURL (the projector's address)")
)

// errNotModified is a 304 answer to a conditional GET: the resource still
// matches the If-None-Match sent. It is not retried.
var errNotModified = fmt.Errorf("%w: HTTP 304 Not Modified", ErrUnexpectedResponse)

// Error is the gateway's answer to a request it did not accept: any non-2xx
// HTTP status. Every error a gateway call returns for such an answer
// wraps an *Error, so errors.As finds it (also after retries).
type Error struct {
	// Status is the HTTP status code.
	Status int
	// Code is the stable error code of the body (the api.Code… constants),
	// or "" when the body is not the gateway's error shape (a proxy's HTML
	// page, say).
	Code string
	// Message describes the error for people: the body's message or, for a
	// body not of the error shape, its start (or the status text).
	Message string
	// Details are the body's details for programs; nil when there are none.
	Details map[string]any
	// RetryAfter is how long the gateway asked the caller to wait (the
	// Retry-After header, else details.retryAfter); zero when it did not
	// say.
	RetryAfter time.Duration
}

// Error returns "client: <code> (HTTP <status>): <message>", leaving out
// the code when there is none.
func (e *Error) Error() string {
	if e.Code == "" {
		return fmt.Sprintf("client: HTTP %d: %s", e.Status, e.Message)
	}
	return fmt.Sprintf("client: %s (HTTP %d): %s", e.Code, e.Status, e.Message)
}

// IsCode reports whether err wraps an *Error whose Code is code, e.g.
// IsCode(err, api.CodeSignalAcceptanceIndeterminate).
func IsCode(err error, code string) bool {
	var e *Error
	return errors.As(err, &e) && e.Code == code
}

// transportError is a failure to get an answer at all: the connection was
// refused or reset, the attempt timed out, the body was cut off.
type transportError struct{ err error }

func (e *transportError) Error() string { return e.err.Error() }
func (e *transportError) Unwrap() error { return e.err }

// maxMessageBytes bounds the Message taken from a body that is not of the
// error shape.
const maxMessageBytes = 256

// decodeError turns a non-2xx answer into an *Error. now serves an HTTP-date
// Retry-After.
func decodeError(status int, header http.Header, body []byte, now time.Time) *Error {
	e := &Error{Status: status}
	var eb api.ErrorBody
	if json.Unmarshal(body, &eb) == nil && eb.Error.Code != "" {
		e.Code, e.Message, e.Details = eb.Error.Code, eb.Error.Message, eb.Error.Details
	} else {
		e.Message = snippet(body, status)
	}
	e.RetryAfter = retryAfterHeader(header.Get("Retry-After"), now)
	if e.RetryAfter == 0 {
		e.RetryAfter = retryAfterDetail(e.Details["retryAfter"])
	}
	return e
}

// snippet is the start of a body for a message, or the status text.
func snippet(body []byte, status int) string {
	s := strings.TrimSpace(string(body))
	if s == "" {
		return http.StatusText(status)
	}
	if len(s) > maxMessageBytes {
		s = s[:maxMessageBytes]
		for !utf8.ValidString(s) {
			s = s[:len(s)-1]
		}
		s += "…"
	}
	return s
}

// retryAfterHeader parses a Retry-After header: delay-seconds or an
// HTTP-date (RFC 9110 §10.2.3). It returns 0 for a missing or bad value.
func retryAfterHeader(v string, now time.Time) time.Duration {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0
	}
	if secs, err := strconv.ParseInt(v, 10, 64); err == nil {
		return seconds(float64(secs))
	}
	if t, err := http.ParseTime(v); err == nil && t.After(now) {
		return t.Sub(now)
	}
	return 0
}

// retryAfterDetail parses details.retryAfter: a number of seconds, or a
// string of seconds or of a Go duration ("1.5s"). It returns 0 otherwise.
func retryAfterDetail(v any) time.Duration {
	switch v := v.(type) {
	case float64:
		return seconds(v)
	case string:
		if secs, err := strconv.ParseFloat(v, 64); err == nil {
			return seconds(secs)
		}
		if d, err := time.ParseDuration(v); err == nil && d > 0 {
			return d
		}
	}
	return 0
}

// seconds converts a count of seconds to a Duration; negative, NaN and
// values past the Duration range give 0 and the maximum respectively.
func seconds(s float64) time.Duration {
	switch {
	case !(s > 0):
		return 0
	case s >= math.MaxInt64/float64(time.Second):
		return math.MaxInt64
	default:
		return time.Duration(s * float64(time.Second))
	}
}

// retryableStatus reports whether an answer of this status may succeed if
// the same request is sent again.
func retryableStatus(status int) bool {
	switch status {
	case http.StatusTooManyRequests, http.StatusInternalServerError, http.StatusBadGateway,
		http.StatusServiceUnavailable, http.StatusGatewayTimeout:
		return true
	}
	return false
}

// retryable reports whether err, the failure of one attempt, may be retried.
// Nothing is retried once ctx is done.
func retryable(ctxErr, err error) bool {
	if ctxErr != nil {
		return false
	}
	var e *Error
	if errors.As(err, &e) {
		return retryableStatus(e.Status)
	}
	var te *transportError
	if !errors.As(err, &te) {
		return false
	}
	// A certificate the client rejects will be rejected again.
	var cv *tls.CertificateVerificationError
	return !errors.As(err, &cv)
}
