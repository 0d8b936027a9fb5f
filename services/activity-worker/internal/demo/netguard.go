package demo

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"syscall"
	"time"
)

// AddressPolicy decides which addresses http-get may connect to. It is
// checked on the resolved IP address of every connection, at dial time,
// so neither a host name that resolves to an internal address (DNS
// rebinding included) nor a redirect can get past it.
//
// The zero value refuses loopback, private (RFC 1918, RFC 4193, shared
// CGNAT), link-local, unspecified, multicast, broadcast, reserved and
// cloud-metadata addresses, and allows the rest (the public internet).
type AddressPolicy struct {
	// Allow lists prefixes that are allowed although a refused range holds
	// them, e.g. 10.1.2.0/24 for an internal service the activities must
	// reach. It is the only way to allow a metadata address.
	Allow []netip.Prefix
	// AllowPrivate allows every refused range except the cloud-metadata
	// addresses (169.254.169.254, fd00:ec2::254): for a worker whose
	// activities serve a private network, or for tests.
	AllowPrivate bool
}

// ErrAddressRefused is what the dial of an address the policy refuses
// fails with.
var ErrAddressRefused = errors.New("the address is refused by the worker's address policy")

// metadataAddrs are the cloud instance-metadata endpoints (AWS, GCP, Azure
// and others use the IPv4 one; AWS also the IPv6 one).
var metadataAddrs = []netip.Addr{
	netip.MustParseAddr("169.254.169.254"),
	netip.MustParseAddr("fd00:ec2::254"),
}

// refusedPrefixes are the ranges netip's predicates do not cover:
// "this network", shared address space (CGNAT), IETF protocol assignments,
// benchmarking, reserved and broadcast, and NAT64 (which embeds IPv4).
var refusedPrefixes = []netip.Prefix{
	netip.MustParsePrefix("0.0.0.0/8"),
	netip.MustParsePrefix("100.64.0.0/10"),
	netip.MustParsePrefix("192.0.0.0/24"),
	netip.MustParsePrefix("198.18.0.0/15"),
	netip.MustParsePrefix("240.0.0.0/4"),
	netip.MustParsePrefix("64:ff9b::/96"),
	netip.MustParsePrefix("64:ff9b:1::/48"),
}

// Allowed reports whether the policy lets a connection reach addr.
func (p AddressPolicy) Allowed(addr netip.Addr) bool {
	addr = addr.Unmap()
	for _, pre := range p.Allow {
		if pre.Contains(addr) {
			return true
		}
	}
	for _, m := range metadataAddrs {
		if addr == m {
			return false
		}
	}
	return p.AllowPrivate || public(addr)
}

// public reports whether addr is outside every refused range.
func public(addr netip.Addr) bool {
	if !addr.IsValid() || addr.IsLoopback() || addr.IsPrivate() || addr.IsUnspecified() ||
		addr.IsLinkLocalUnicast() || addr.IsMulticast() || addr.IsLinkLocalMulticast() ||
		addr.IsInterfaceLocalMulticast() {
		return false
	}
	for _, pre := range refusedPrefixes {
		if pre.Contains(addr) {
			return false
		}
	}
	return true
}

// control is a net.Dialer Control function: it runs after the name is
// resolved, before the socket connects, with the address it will connect
// to, and refuses an address the policy does not allow.
func (p AddressPolicy) control(_, address string, _ syscall.RawConn) error {
	ap, err := netip.ParseAddrPort(address)
	if err != nil {
		return fmt.Errorf("%w: unparsable address", ErrAddressRefused)
	}
	if !p.Allowed(ap.Addr()) {
		return ErrAddressRefused
	}
	return nil
}

// NewHTTPClient returns the client http-get needs: every connection it
// makes is checked against policy at dial time, it uses no proxy (a proxy
// would connect on its behalf, past the check), and it does not follow
// redirects, so the activity requests the URL given and no other. A
// caller that sets CheckRedirect to follow them is still held to policy
// on every hop.
func NewHTTPClient(policy AddressPolicy) *http.Client {
	dialer := &net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second, Control: policy.control}
	transport := &http.Transport{
		Proxy:                 nil,
		DialContext:           dialer.DialContext,
		ForceAttemptHTTP2:     true,
		MaxIdleConns:          100,
		IdleConnTimeout:       90 * time.Second,
		TLSHandshakeTimeout:   10 * time.Second,
		ExpectContinueTimeout: time.Second,
		ResponseHeaderTimeout: time.Minute,
	}
	return &http.Client{
		Transport:     transport,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
}
