package jsonrpc

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"strings"
	"unicode/utf8"
)

// DefaultMaxBatch is the largest batch a Server executes when
// Options.MaxBatch is zero.
const DefaultMaxBatch = 100

// Method handles one JSON-RPC method. params is the request's params member
// as it came (an object or an array), or nil when the request has none. It
// returns a result, marshalled with encoding/json, or an error: an *Error in
// the error's chain is sent to the caller, any other error is logged and
// answered with -32603 "internal error". ctx is Serve's.
type Method func(ctx context.Context, params json.RawMessage) (result any, err error)

// Options tunes a Server. The zero value means the defaults.
type Options struct {
	// MaxBatch is the largest number of elements a batch may have;
	// a larger batch is rejected whole with -32600 and nothing in it runs.
	// Zero means DefaultMaxBatch; it must not be negative.
	MaxBatch int
}

// Server executes JSON-RPC 2.0 requests against a fixed set of methods. It
// is safe for concurrent use and starts no goroutines.
type Server struct {
	methods  map[string]Method
	maxBatch int
	logger   *slog.Logger
}

// NewServer returns a Server for methods, which it copies. It fails if
// logger is nil, a method is nil, a name is empty or reserved by the
// specification (it begins with "rpc."), or opts.MaxBatch is negative.
func NewServer(methods map[string]Method, opts Options, logger *slog.Logger) (*Server, error) {
	if logger == nil {
		return nil, errors.New("jsonrpc: nil logger")
	}
	if opts.MaxBatch < 0 {
		return nil, fmt.Errorf("jsonrpc: MaxBatch %d is negative", opts.MaxBatch)
	}
	for name, m := range methods {
		switch {
		case name == "", strings.HasPrefix(name, "rpc."):
			return nil, fmt.Errorf("jsonrpc: method name %q is empty or reserved", name)
		case m == nil:
			return nil, fmt.Errorf("jsonrpc: method %q is nil", name)
		}
	}
	maxBatch := opts.MaxBatch
	if maxBatch == 0 {
		maxBatch = DefaultMaxBatch
	}
	return &Server{methods: maps.Clone(methods), maxBatch: maxBatch, logger: logger}, nil
}

// Serve executes the request or batch in body and returns the answer.
// ok is false when there is nothing to answer: body is a notification or
// a batch of notifications, and resp is nil. Otherwise resp is a response
// object or, for a batch, an array of them. See the package documentation
// for the rules.
func (s *Server) Serve(ctx context.Context, body []byte) (resp []byte, ok bool) {
	if !utf8.Valid(body) || !json.Valid(body) {
		return ParseErrorResponse("", nil), true
	}
	if kind(body) == '[' {
		return s.serveBatch(ctx, body)
	}
	return s.serveOne(ctx, body)
}

// serveBatch executes the elements of a batch in order.
func (s *Server) serveBatch(ctx context.Context, body []byte) ([]byte, bool) {
	var elems []json.RawMessage
	if err := json.Unmarshal(body, &elems); err != nil {
		return ParseErrorResponse("", nil), true
	}
	switch {
	case len(elems) == 0:
		return ErrorResponse(nil, invalidRequest("the batch is empty")), true
	case len(elems) > s.maxBatch:
		msg := fmt.Sprintf("the batch has %d elements, more than the limit of %d", len(elems), s.maxBatch)
		return ErrorResponse(nil, invalidRequest(msg)), true
	}
	var answers [][]byte
	for _, elem := range elems {
		if answer, ok := s.serveOne(ctx, elem); ok {
			answers = append(answers, answer)
		}
	}
	if len(answers) == 0 {
		return nil, false
	}
	return batchResponse(answers), true
}

// serveOne executes one request object and answers it unless it is a
// notification.
func (s *Server) serveOne(ctx context.Context, raw json.RawMessage) ([]byte, bool) {
	req, answerID, rpcErr := parseRequest(raw)
	if rpcErr != nil {
		return ErrorResponse(answerID, rpcErr), true
	}
	result, rpcErr := s.call(ctx, req)
	if req.notification() {
		return nil, false
	}
	if rpcErr != nil {
		return s.encodeError(ctx, req, rpcErr), true
	}
	return s.encodeResult(ctx, req, result), true
}

// call runs the request's method and returns its marshalled result or the
// error to answer with.
func (s *Server) call(ctx context.Context, req request) (json.RawMessage, *Error) {
	m, ok := s.methods[req.method]
	if !ok {
		return nil, &Error{Code: CodeMethodNotFound, Message: fmt.Sprintf("method %q not found", req.method)}
	}
	result, err := m(ctx, req.params)
	if err != nil {
		var rpcErr *Error
		if errors.As(err, &rpcErr) && rpcErr != nil {
			return nil, rpcErr
		}
		s.logger.ErrorContext(ctx, "jsonrpc method failed", "method", req.method, "error", err)
		return nil, internalError()
	}
	b, err := json.Marshal(result)
	if err != nil {
		s.logger.ErrorContext(ctx, "jsonrpc result cannot be marshalled", "method", req.method, "error", err)
		return nil, internalError()
	}
	return b, nil
}

// encodeResult answers req with result, or with an internal error if the
// response cannot be encoded.
func (s *Server) encodeResult(ctx context.Context, req request, result json.RawMessage) []byte {
	b, err := resultResponse(req.id, result)
	if err != nil {
		s.logger.ErrorContext(ctx, "jsonrpc response cannot be encoded", "method", req.method, "error", err)
		b, _ = errorResponse(req.id, internalError()) // Has no data to drop.
	}
	return b
}

// encodeError answers req with e, without e.Data if that cannot be
// marshalled, which it logs.
func (s *Server) encodeError(ctx context.Context, req request, e *Error) []byte {
	b, dataErr := errorResponse(req.id, e)
	if dataErr != nil {
		s.logger.ErrorContext(ctx, "jsonrpc error data cannot be marshalled", "method", req.method,
			"code", e.Code, "error", dataErr)
	}
	return b
}

// internalError returns the -32603 error that hides a fault's details.
func internalError() *Error {
	return &Error{Code: CodeInternalError, Message: "internal error"}
}
