package ui_test

import (
	"io/fs"
	"net/http"
	"net/http/httptest"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/weftrun/weft/services/projector/internal/ui"
)

// ---- Handler, without a browser ------------------------------------------

// answer is a response of ui.Handler.
type answer struct {
	status int
	header http.Header
	body   string
}

// get serves one request through ui.Handler.
func get(t *testing.T, h http.Handler, method, path string, header http.Header) answer {
	t.Helper()
	r := httptest.NewRequestWithContext(t.Context(), method, path, nil)
	for k, vs := range header {
		r.Header[k] = vs
	}
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	return answer{status: w.Code, header: w.Header(), body: w.Body.String()}
}

// assetPath returns the versioned path of an asset, as index.html names it.
func assetPath(t *testing.T, h http.Handler, name string) string {
	t.Helper()
	index := get(t, h, http.MethodGet, "/", nil).body
	m := regexp.MustCompile(`/ui/[0-9a-f]{12}/` + regexp.QuoteMeta(name)).FindString(index)
	require.NotEmpty(t, m, "index.html names %s under /ui/<version>/", name)
	return m
}

func TestHandlerPages(t *testing.T) {
	t.Parallel()
	h := ui.Handler(ui.Options{})
	for _, path := range []string{"/", "/runs/0193a1f4-7c41-7a8e-9d1f-3b2c5e8f4a10", "/runs/anything", "/?status=FAILED&plan=x", "/schedules", "/triggers",
		"/plans", "/plans/orders?projectId=shop"} {
		t.Run(path, func(t *testing.T) {
			t.Parallel()
			res := get(t, h, http.MethodGet, path, nil)
			body := res.body
			require.Equal(t, http.StatusOK, res.status)
			require.Equal(t, "text/html; charset=utf-8", res.header.Get("Content-Type"))
			require.Equal(t, "default-src 'self'; style-src 'self'; script-src 'self'; img-src 'self' data:; base-uri 'none'; form-action 'none'", res.header.Get("Content-Security-Policy"))
			require.Equal(t, "no-cache", res.header.Get("Cache-Control"))
			require.Equal(t, "nosniff", res.header.Get("X-Content-Type-Options"))
			require.NotEmpty(t, res.header.Get("ETag"))
			require.Contains(t, body, "<title>Weft</title>")
			require.NotContains(t, body, "{{version}}", "the asset version is filled in")
			require.Contains(t, body, `<meta name="weft-poll-ms" content="">`, "the default intervals")
			require.Regexp(t, `<script type="module" src="/ui/[0-9a-f]{12}/app.js"></script>`, body)
		})
	}
}

// A poll interval given in Options is told to the pages in milliseconds.
func TestHandlerPollInterval(t *testing.T) {
	t.Parallel()
	body := get(t, ui.Handler(ui.Options{PollInterval: 1500 * time.Microsecond}), http.MethodGet, "/", nil).body
	require.Contains(t, body, `<meta name="weft-poll-ms" content="1">`)
	body = get(t, ui.Handler(ui.Options{PollInterval: 250 * time.Millisecond}), http.MethodGet, "/schedules", nil).body
	require.Contains(t, body, `<meta name="weft-poll-ms" content="250">`)
}

func TestHandlerNotFound(t *testing.T) {
	t.Parallel()
	h := ui.Handler(ui.Options{})
	version := strings.Split(assetPath(t, h, "app.js"), "/")[2]
	for _, path := range []string{"/runs", "/runs/", "/runs/a/b", "/v1/runs", "/schedules/", "/schedules/a", "/plans/", "/plans/a/b", "/gateway/v1/schedules", "/favicon.ico", "/ui/", "/ui/" + version + "/nope.js", "/ui/" + version + "/index.html", "/ui/app.js"} {
		require.Equal(t, http.StatusNotFound, get(t, h, http.MethodGet, path, nil).status, path)
	}
	require.Equal(t, http.StatusMethodNotAllowed, get(t, h, http.MethodPost, "/", nil).status)
}

func TestHandlerAssets(t *testing.T) {
	t.Parallel()
	h := ui.Handler(ui.Options{})
	types := map[string]string{
		"app.js":       "text/javascript; charset=utf-8",
		"api.js":       "text/javascript; charset=utf-8",
		"schedules.js": "text/javascript; charset=utf-8",
		"pagedlist.js": "text/javascript; charset=utf-8",
		"app.css":      "text/css; charset=utf-8",
		"favicon.svg":  "image/svg+xml",
	}
	for name, contentType := range types {
		path := assetPath(t, h, "app.js")
		path = strings.TrimSuffix(path, "app.js") + name
		res := get(t, h, http.MethodGet, path, nil)
		require.Equal(t, http.StatusOK, res.status, path)
		require.Equal(t, contentType, res.header.Get("Content-Type"), name)
		require.Equal(t, "public, max-age=31536000, immutable", res.header.Get("Cache-Control"), name)
		require.Equal(t, "nosniff", res.header.Get("X-Content-Type-Options"))
		require.NotEmpty(t, res.body)

		again := get(t, h, http.MethodGet, path, http.Header{"If-None-Match": {res.header.Get("ETag")}})
		require.Equal(t, http.StatusNotModified, again.status, "a matching If-None-Match answers 304")

		old := get(t, h, http.MethodGet, "/ui/000000000000/"+name, nil)
		require.Equal(t, http.StatusOK, old.status, "another version is still served")
		require.Equal(t, "no-cache", old.header.Get("Cache-Control"), "but not cached for good")
	}

	head := get(t, h, http.MethodHead, "/", nil)
	require.Equal(t, http.StatusOK, head.status)
	require.Empty(t, head.body)
}

// TestAssetsSource checks the rules the UI's source keeps: every relative
// module import names an embedded file, no API data can reach an HTML
// parser, and index.html has no inline script or style (the CSP forbids
// them).
func TestAssetsSource(t *testing.T) {
	t.Parallel()
	files := os.DirFS("assets")
	names, err := fs.Glob(files, "*")
	require.NoError(t, err)
	require.Contains(t, names, "index.html")
	importRE := regexp.MustCompile(`(?m)^import .* from '\./([^']+)';$`)
	forbidden := regexp.MustCompile(`innerHTML|outerHTML|insertAdjacentHTML|document\.write|eval\(|new Function`)
	for _, name := range names {
		b, err := fs.ReadFile(files, name)
		require.NoError(t, err)
		src := string(b)
		if strings.HasSuffix(name, ".js") {
			for _, m := range importRE.FindAllStringSubmatch(src, -1) {
				require.Contains(t, names, m[1], "%s imports ./%s", name, m[1])
			}
			require.NotRegexp(t, forbidden, src, "%s builds DOM with createElement and textContent only", name)
		}
	}
	index, err := fs.ReadFile(files, "index.html")
	require.NoError(t, err)
	scripts := regexp.MustCompile(`(?s)<script([^>]*)>(.*?)</script>`).FindAllStringSubmatch(string(index), -1)
	require.NotEmpty(t, scripts)
	for _, m := range scripts {
		require.Contains(t, m[1], ` src="`, "every script is a file")
		require.Empty(t, strings.TrimSpace(m[2]), "no inline script")
	}
	require.NotRegexp(t, `<style|\sstyle=|\son[a-z]+=`, string(index), "no inline style or handler")
}
