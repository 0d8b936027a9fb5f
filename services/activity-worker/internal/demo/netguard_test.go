package demo_test

import (
	"bufio"
	"encoding/json"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strconv"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/weftrun/weft/pkg/worker"
	"github.com/weftrun/weft/services/activity-worker/internal/demo"
)

func TestAddressPolicyRanges(t *testing.T) {
	t.Parallel()
	deflt := demo.AddressPolicy{}
	private := demo.AddressPolicy{AllowPrivate: true}
	listed := demo.AddressPolicy{Allow: []netip.Prefix{netip.MustParsePrefix("10.1.0.0/16"), netip.MustParsePrefix("169.254.169.254/32")}}
	for _, tt := range []struct {
		addr                   string
		byDefault, withPrivate bool
		withList               bool
	}{
		{"8.8.8.8", true, true, true},
		{"2001:4860:4860::8888", true, true, true},
		{"127.0.0.1", false, true, false},
		{"127.9.9.9", false, true, false},
		{"::1", false, true, false},
		{"::ffff:127.0.0.1", false, true, false},
		{"10.1.2.3", false, true, true},
		{"10.2.0.1", false, true, false},
		{"172.16.0.1", false, true, false},
		{"192.168.1.1", false, true, false},
		{"fc00::1", false, true, false},
		{"169.254.1.1", false, true, false},
		{"fe80::1", false, true, false},
		{"0.0.0.0", false, true, false},
		{"::", false, true, false},
		{"224.0.0.1", false, true, false},
		{"ff02::1", false, true, false},
		{"100.64.0.1", false, true, false},
		{"255.255.255.255", false, true, false},
		{"64:ff9b::7f00:1", false, true, false},
		{"169.254.169.254", false, false, true},
		{"::ffff:169.254.169.254", false, false, true},
		{"fd00:ec2::254", false, false, false},
	} {
		a := netip.MustParseAddr(tt.addr)
		require.Equal(t, tt.byDefault, deflt.Allowed(a), "default %s", tt.addr)
		require.Equal(t, tt.withPrivate, private.Allowed(a), "AllowPrivate %s", tt.addr)
		require.Equal(t, tt.withList, listed.Allowed(a), "Allow list %s", tt.addr)
	}
}

// hits serves 200 and counts its requests.
func hits(t *testing.T, addr string) (*httptest.Server, *atomic.Int64) {
	t.Helper()
	var n atomic.Int64
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { n.Add(1) }))
	l, err := net.Listen("tcp", addr)
	require.NoError(t, err)
	srv.Listener = l
	srv.Start()
	t.Cleanup(srv.Close)
	return srv, &n
}

func httpGet(t *testing.T, policy demo.AddressPolicy, url string) (worker.Output, error) {
	t.Helper()
	in, err := json.Marshal(map[string]string{"url": url})
	require.NoError(t, err)
	return demo.HTTPGet(demo.NewHTTPClient(policy))(t.Context(), worker.Input{JSON: in, Activity: "http-get"})
}

// requireFailure checks err is a worker.Error of code and retryability,
// and returns its message.
func requireFailure(t *testing.T, err error, code string, retryable bool) string {
	t.Helper()
	var e *worker.Error
	require.ErrorAs(t, err, &e)
	require.Equal(t, code, e.Code, e.Message)
	require.Equal(t, retryable, e.Retryable)
	return e.Message
}

func TestHTTPGetRefusesLoopbackUnlessAllowed(t *testing.T) {
	t.Parallel()
	srv, n := hits(t, "127.0.0.1:0")
	port := srv.Listener.Addr().(*net.TCPAddr).Port
	for _, url := range []string{srv.URL, "http://localhost:" + itoa(port) + "/"} {
		_, err := httpGet(t, demo.AddressPolicy{}, url)
		requireFailure(t, err, demo.CodeAddressRefused, false)
	}
	require.Zero(t, n.Load(), "a refused address is never connected to")

	for _, policy := range []demo.AddressPolicy{
		{AllowPrivate: true},
		{Allow: []netip.Prefix{netip.MustParsePrefix("127.0.0.1/32")}},
	} {
		out, err := httpGet(t, policy, srv.URL)
		require.NoError(t, err, "%+v", policy)
		require.JSONEq(t, `{"status":200,"bodyBytes":0,"truncated":false}`, string(out.JSON))
	}
	require.Equal(t, int64(2), n.Load())
}

func TestHTTPGetRedirectToLoopbackIsRefused(t *testing.T) {
	t.Parallel()
	target, targetHits := hits(t, "127.0.0.2:0")
	front := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, target.URL+"/secret", http.StatusFound)
	}))
	t.Cleanup(front.Close)
	policy := demo.AddressPolicy{Allow: []netip.Prefix{netip.MustParsePrefix("127.0.0.1/32")}}

	// The activity reports the redirect and does not follow it.
	out, err := httpGet(t, policy, front.URL)
	require.NoError(t, err)
	var got struct{ Status int }
	require.NoError(t, json.Unmarshal(out.JSON, &got))
	require.Equal(t, http.StatusFound, got.Status)

	// A client that follows redirects is still held to the policy on each hop.
	client := demo.NewHTTPClient(policy)
	client.CheckRedirect = nil
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, front.URL, http.NoBody)
	require.NoError(t, err)
	resp, err := client.Do(req)
	if err == nil {
		_ = resp.Body.Close()
	}
	require.ErrorIs(t, err, demo.ErrAddressRefused)
	require.Zero(t, targetHits.Load(), "the redirect's target is never connected to")
}

func TestHTTPGetDoesNotEchoABanner(t *testing.T) {
	t.Parallel()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { _ = l.Close() })
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			_, _ = c.Write([]byte("SSH-2.0-secret-banner\r\n"))
			_, _ = bufio.NewReader(c).ReadString('\n')
			_ = c.Close()
		}
	}()
	_, err = httpGet(t, demo.AddressPolicy{AllowPrivate: true}, "http://"+l.Addr().String()+"/")
	msg := requireFailure(t, err, demo.CodeTransport, true)
	for _, s := range []string{msg, err.Error()} {
		require.NotContains(t, s, "secret-banner")
		require.NotContains(t, s, "SSH")
	}
}

func TestHTTPGetConnectionRefused(t *testing.T) {
	t.Parallel()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := l.Addr().String()
	require.NoError(t, l.Close())
	_, err = httpGet(t, demo.AddressPolicy{AllowPrivate: true}, "http://"+addr+"/")
	msg := requireFailure(t, err, demo.CodeTransport, true)
	require.Equal(t, "http-get: request: the connection was refused", msg)
	require.NotErrorIs(t, err, demo.ErrAddressRefused)
}

func itoa(n int) string { return strconv.Itoa(n) }
