package cli

import (
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/weftrun/weft/cmd/weft/internal/devfile"
	"github.com/weftrun/weft/pkg/weftest"
)

func TestMain(m *testing.M) { weftest.Main(m) }

// testEnv is an Env with the variables vars, writing to buffers.
func testEnv(vars map[string]string) *Env {
	return &Env{Stdout: &weftest.Buffer{}, Stderr: &weftest.Buffer{}, Getenv: func(k string) string { return vars[k] }, Version: "test"}
}

// runsLs runs `weft runs ls args…` with the variables vars.
func runsLs(t *testing.T, vars map[string]string, args ...string) error {
	t.Helper()
	return RunsCommands()["ls"].Run(t.Context(), testEnv(vars), args)
}

// fakeServer is someone else's server on a port the CLI may reach: it
// answers every request with status and records each request's path and
// bearer token.
type fakeServer struct {
	*httptest.Server
	mu       sync.Mutex
	requests []string
}

func newFakeServer(t *testing.T, status int, body string) *fakeServer {
	t.Helper()
	f := &fakeServer{}
	f.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f.mu.Lock()
		f.requests = append(f.requests, r.URL.Path+" "+r.Header.Get("Authorization"))
		f.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		_, _ = w.Write([]byte(body))
	}))
	t.Cleanup(f.Close)
	return f
}

func (f *fakeServer) seen() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.requests...)
}

// The CLI takes each URL from its flag, else its variable, else weft dev's
// endpoints file, else the default, and the token from the file the
// endpoints name. An authentication failure against a URL that the
// endpoints file did not name says where that URL came from.
func TestCLIURLSources(t *testing.T) {
	t.Parallel()
	dev := newFakeServer(t, http.StatusOK, `{"runs":[]}`)
	other := newFakeServer(t, http.StatusUnauthorized, `{"code":"Unauthenticated","message":"unknown key"}`)
	dir := t.TempDir()
	tokenFile := filepath.Join(t.TempDir(), "elsewhere-token")
	require.NoError(t, os.WriteFile(tokenFile, []byte("weft_token_from_the_file\n"), 0o600))
	require.NoError(t, devfile.Write(dir, devfile.Endpoints{Gateway: dev.URL, ReadAPI: dev.URL, TokenFile: tokenFile}))

	err := runsLs(t, map[string]string{"WEFT_DEV_DIR": dir})
	require.NoError(t, err)
	require.Equal(t, []string{"/v1/runs Bearer weft_token_from_the_file"}, dev.seen(), "the URL and the token file of the endpoints")

	err = runsLs(t, map[string]string{"WEFT_DEV_DIR": dir, "WEFT_READ_URL": other.URL})
	require.ErrorContains(t, err, "HTTP 401")
	require.ErrorContains(t, err, "(the read API "+other.URL+" is from WEFT_READ_URL: is that the server you meant? `weft dev` writes its URLs to $WEFT_DEV_DIR/endpoints.json")
	require.NotContains(t, err.Error(), "the gateway", "the gateway's URL came from the endpoints file")

	err = runsLs(t, map[string]string{"WEFT_DEV_DIR": dir, "WEFT_READ_URL": dev.URL}, "--read-url", other.URL)
	require.ErrorContains(t, err, "the read API "+other.URL+" is from --read-url")

	err = runsLs(t, map[string]string{"WEFT_DEV_DIR": dir}, "--read-url", other.URL, "--api-url", other.URL)
	require.ErrorContains(t, err, "the gateway "+other.URL+" is from --api-url; the read API "+other.URL+" is from --read-url")

	err = runsLs(t, map[string]string{"WEFT_DEV_DIR": dir, "WEFT_READ_URL": dev.URL})
	require.NoError(t, err, "a variable wins over the endpoints file")

	// A stale endpoints file: another stack answers at its URLs.
	stale := t.TempDir()
	require.NoError(t, devfile.Write(stale, devfile.Endpoints{Gateway: other.URL, ReadAPI: other.URL, TokenFile: tokenFile}))
	err = runsLs(t, map[string]string{"WEFT_DEV_DIR": stale})
	require.ErrorContains(t, err, "HTTP 401")
	require.ErrorContains(t, err, "(the URLs are those "+filepath.Join(stale, "endpoints.json")+" names: if the stack that wrote it has stopped, another may answer there")

	// Without the file, the defaults, which say so.
	env := testEnv(map[string]string{"WEFT_DEV_DIR": t.TempDir(), "WEFT_TOKEN": "weft_x"})
	cmd := newAPICommand(env, "runs ls", lsSynopsis, "")
	_, err = cmd.parse(nil)
	require.NoError(t, err)
	c, err := cmd.conn.client()
	require.NoError(t, err)
	defer c.close()
	require.Equal(t, []string{defaultAPIURL, defaultReadURL}, []string{c.apiURL, c.readURL})
	require.Equal(t, "the default (no --read-url, no WEFT_READ_URL, no "+filepath.Join(env.Getenv("WEFT_DEV_DIR"), devfile.Name)+")", c.readFrom)
}

// --input and --payload read a document from @FILE or - (stdin), and
// say which when it is not JSON.
func TestJSONArgSources(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	big := `{"s": "` + strings.Repeat("x", 200<<10) + `"}` // beyond a shell argument's comfort
	require.NoError(t, os.WriteFile(filepath.Join(dir, "in.json"), []byte(big), 0o600))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "bad.json"), []byte(`{"a":`), 0o600))

	doc, err := jsonArgFrom("--input", "@"+filepath.Join(dir, "in.json"), nil)
	require.NoError(t, err)
	require.JSONEq(t, big, string(doc))
	doc, err = jsonArgFrom("--payload", "-", strings.NewReader(`{"from": "stdin"}`))
	require.NoError(t, err)
	require.JSONEq(t, `{"from": "stdin"}`, string(doc))
	doc, err = jsonArgFrom("--input", "", nil)
	require.NoError(t, err)
	require.Nil(t, doc)

	_, err = jsonArgFrom("--input", "@"+filepath.Join(dir, "bad.json"), nil)
	require.ErrorContains(t, err, "bad.json is not JSON")
	_, err = jsonArgFrom("--input", "@"+filepath.Join(dir, "missing.json"), nil)
	require.ErrorContains(t, err, "missing.json")
	_, err = jsonArgFrom("--payload", "-", strings.NewReader(`nope`))
	require.ErrorContains(t, err, "standard input is not JSON")
	_, err = jsonArgFrom("--payload", "-", strings.NewReader(`"`+strings.Repeat("x", maxJSONArgBytes)+`"`))
	require.ErrorContains(t, err, "more than")
}

// A mistyped flag is named as typed, with the flag a typo away, and a
// flag nothing is close to says where the flags are listed.
func TestUnknownFlagSuggests(t *testing.T) {
	t.Parallel()
	err := runsLs(t, nil, "--stauts", "FAILED")
	require.EqualError(t, err, "unknown flag --stauts: did you mean --status?")
	err = runsLs(t, nil, "-limt", "3")
	require.EqualError(t, err, "unknown flag --limt: did you mean --limit?")
	err = runsLs(t, nil, "--frobnicate")
	require.EqualError(t, err, "unknown flag --frobnicate (-h lists the flags)")
}
