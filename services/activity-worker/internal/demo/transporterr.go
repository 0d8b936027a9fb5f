package demo

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"io"
	"net"
	"syscall"

	"github.com/weftrun/weft/pkg/worker"
)

// CodeAddressRefused is the code of http-get's non-retryable failure when
// its URL, or a connection it needs, reaches an address the worker's
// AddressPolicy refuses.
const CodeAddressRefused = "ADDRESS_REFUSED"

// CodeTransport is the code of http-get's retryable failure when no HTTP
// response came back (the connection failed, or what came back was not
// HTTP).
const CodeTransport = "TRANSPORT_ERROR"

// transportFailure turns the error of a request or of reading its body
// into a failure whose message is one fixed phrase per error class. It
// never carries err.Error(): Go's errors for a malformed response, a bad
// header line or a TLS record quote the bytes the remote end sent, and a
// step's failure message is shown to whoever reads the run, so http-get
// must not be a way to read the banner of a non-HTTP service.
func transportFailure(step string, err error) error {
	if errors.Is(err, ErrAddressRefused) {
		return worker.NonRetryable(CodeAddressRefused, "http-get: "+ErrAddressRefused.Error())
	}
	return worker.Retryable(CodeTransport, "http-get: "+step+": "+transportClass(err))
}

// transportClass names the class of a transport error in fixed words.
func transportClass(err error) string {
	var (
		dnsErr  *net.DNSError
		netErr  net.Error
		certErr *tls.CertificateVerificationError
		recErr  tls.RecordHeaderError
		alert   tls.AlertError
		unknown x509.UnknownAuthorityError
	)
	switch {
	case errors.As(err, &dnsErr):
		return "the host name did not resolve"
	case errors.Is(err, syscall.ECONNREFUSED):
		return "the connection was refused"
	case errors.Is(err, syscall.ECONNRESET):
		return "the connection was reset"
	case errors.As(err, &netErr) && netErr.Timeout():
		return "the connection timed out"
	case errors.As(err, &certErr), errors.As(err, &recErr), errors.As(err, &alert), errors.As(err, &unknown):
		return "the TLS handshake failed"
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return "the connection closed before a complete response"
	default:
		return "no valid HTTP response"
	}
}
