// Package ui is the projector's web UI: a runs list, a run page, the
// schedules, triggers and registered plans, written as plain HTML, CSS
// and JavaScript modules with no build step, embedded in the binary and
// served by Handler.
//
// # Routes
//
// The UI uses path routing:
//
//   - GET / is the runs list; its filters live in the query
//     (/?status=FAILED&plan=hello, /?parent=RUN_ID for a run's child runs).
//   - GET /runs/{runId} is the run page; /runs/{runId}?step=STEP_ID opens
//     the step's panel. A child run's page leads to its parent run and the
//     subPlan step that started it; a subPlan step's, to its child run.
//   - GET /schedules is the schedules list. Schedules live in the gateway:
//     the page reads GET /gateway/v1/schedules, which the projector forwards
//     to the gateway like the UI's signals. A key with run.start (GET
//     /v1/whoami) also pauses, resumes and deletes them there.
//   - GET /triggers is the triggers list, read from GET
//     /gateway/v1/triggers the same way.
//   - GET /plans is the list of registered plan versions, read from GET
//     /gateway/v1/plans the same way, and GET /plans/{planId}?projectId=P
//     a plan's page: its versions (…/plans/{planId}, …/versions/{v}), and
//     for a key with run.start the start of a version by planRef (POST
//     /gateway/v1/runs) and its archive and restore.
//   - GET /ui/{version}/{file} are the assets. version is a hash of every
//     embedded file, so an asset under the current version never changes and
//     is cached for a year; any other version is served with no-cache.
//
// Every page answers the same index.html, and the JavaScript router draws the
// page from location.pathname. Every other path answers 404, so the projector
// can mount Handler as its fallback route beside /v1/... and /gateway/....
//
// # Authentication
//
// The UI calls the read API with the API key of the person using it, sent as
// Authorization: Bearer. It takes the key from a token= parameter in the
// fragment only (/#token=KEY, which never reaches a server), strips it from
// the address and keeps it in localStorage under weft.token; without a key,
// or after a 401, it shows a sign-in form. A token= in the query is never
// used (it lands in server and proxy logs): it is stripped from the address
// and ignored.
package ui

import (
	"bytes"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"errors"
	"fmt"
	"html"
	"io/fs"
	"net/http"
	"path"
	"strconv"
	"strings"
	"time"
)

// assets holds the UI's files. index.html names the others under
// /ui/{{version}}/, which Handler fills in.
//
//go:embed assets
var assets embed.FS

// ContentSecurityPolicy is the policy of every page Handler serves: the UI
// loads its scripts and styles from its own origin only, and has no inline
// script or style. It sets no <base> and submits no form (its one form is
// a <dialog>'s, which navigates nowhere), so base-uri and form-action are
// 'none': injected markup can neither re-root relative URLs nor post a form
// elsewhere.
const ContentSecurityPolicy = "default-src 'self'; style-src 'self'; script-src 'self'; img-src 'self' data:; " +
	"base-uri 'none'; form-action 'none'"

// Cache-Control values of the answers, and the parameters index.html
// holds.
const (
	cacheImmutable        = "public, max-age=31536000, immutable"
	cacheRevalidate       = "no-cache"
	versionParameter      = "{{version}}"
	devTokenFileParameter = "{{devTokenFile}}"
	pollParameter         = "{{pollMs}}"
)

// Options are what the pages tell the UI about the stack that serves it.
type Options struct {
	// DevTokenFile, set for the `weft dev` stack only, is the file holding
	// its API key: the sign-in form names it. Empty names none.
	DevTokenFile string
	// PollInterval, when positive, replaces every interval at which the
	// pages ask again (the runs list's 2 s, the schedules' and triggers'
	// 5 s, a missing run's 2 s, the run page's 1 s backoff after a quick
	// answer), rounded to milliseconds. A test's knob: Weft's own stacks
	// leave it zero, the defaults.
	PollInterval time.Duration
}

// contentTypes are the types of the embedded files, by extension, so the
// answer does not depend on the host's MIME tables.
var contentTypes = map[string]string{
	".html": "text/html; charset=utf-8",
	".js":   "text/javascript; charset=utf-8",
	".css":  "text/css; charset=utf-8",
	".svg":  "image/svg+xml",
}

// file is one embedded file, ready to serve.
type file struct {
	name        string
	body        []byte
	etag        string
	contentType string
}

// Handler returns the UI's handler: index.html for /, /runs/{runId},
// /schedules, /triggers, /plans and /plans/{planId}, the assets under /ui/, and 404 for any other path. Only GET
// and HEAD are allowed. Every answer carries a Content-Type, a
// Cache-Control and X-Content-Type-Options: nosniff; the pages also carry
// ContentSecurityPolicy. The pages carry opts in <meta> elements. The
// handler is safe for concurrent use.
func Handler(opts Options) http.Handler {
	files, version, err := load()
	if err != nil {
		// Unreachable with a binary built from this package: the files are
		// embedded at build time. Answer 500 rather than panic.
		return http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			http.Error(w, "ui: "+err.Error(), http.StatusInternalServerError)
		})
	}
	index := files["index.html"]
	index.body = bytes.ReplaceAll(index.body, []byte(versionParameter), []byte(version))
	index.body = bytes.ReplaceAll(index.body, []byte(devTokenFileParameter), []byte(html.EscapeString(opts.DevTokenFile)))
	index.body = bytes.ReplaceAll(index.body, []byte(pollParameter), []byte(pollMs(opts.PollInterval)))
	index.etag = etag(index.body)

	page := func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Security-Policy", ContentSecurityPolicy)
		w.Header().Set("X-Frame-Options", "DENY")
		w.Header().Set("Referrer-Policy", "no-referrer")
		serve(w, r, index, cacheRevalidate)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /{$}", page)
	mux.HandleFunc("GET /runs/{runId}", page)
	mux.HandleFunc("GET /schedules", page)
	mux.HandleFunc("GET /triggers", page)
	mux.HandleFunc("GET /plans", page)
	mux.HandleFunc("GET /plans/{planId}", page)
	mux.HandleFunc("GET /ui/{version}/{name}", func(w http.ResponseWriter, r *http.Request) {
		f, ok := files[r.PathValue("name")]
		if !ok || f.name == "index.html" {
			http.NotFound(w, r)
			return
		}
		cache := cacheRevalidate
		if r.PathValue("version") == version {
			cache = cacheImmutable
		}
		serve(w, r, f, cache)
	})
	return mux
}

// serve writes f with the Cache-Control cache; http.ServeContent answers
// HEAD, Range and If-None-Match against f's ETag.
func serve(w http.ResponseWriter, r *http.Request, f file, cache string) {
	h := w.Header()
	h.Set("Content-Type", f.contentType)
	h.Set("Cache-Control", cache)
	h.Set("ETag", f.etag)
	h.Set("X-Content-Type-Options", "nosniff")
	http.ServeContent(w, r, f.name, time.Time{}, bytes.NewReader(f.body))
}

// load reads the embedded files, keyed by name, and returns them with the
// version: the first 12 hex digits of a SHA-256 over every name and body.
func load() (map[string]file, string, error) {
	entries, err := fs.ReadDir(assets, "assets")
	if err != nil {
		return nil, "", fmt.Errorf("reading embedded assets: %w", err)
	}
	files := make(map[string]file, len(entries))
	sum := sha256.New()
	for _, e := range entries { // ReadDir sorts by name, so the sum is stable.
		body, err := assets.ReadFile("assets/" + e.Name())
		if err != nil {
			return nil, "", fmt.Errorf("reading embedded asset: %w", err)
		}
		sum.Write([]byte(e.Name()))
		sum.Write([]byte{0})
		sum.Write(body)
		files[e.Name()] = file{
			name:        e.Name(),
			body:        body,
			etag:        etag(body),
			contentType: contentType(e.Name()),
		}
	}
	if _, ok := files["index.html"]; !ok {
		return nil, "", errors.New("no embedded index.html")
	}
	return files, hex.EncodeToString(sum.Sum(nil))[:12], nil
}

// etag returns a strong entity tag for body.
func etag(body []byte) string {
	sum := sha256.Sum256(body)
	return `"` + hex.EncodeToString(sum[:8]) + `"`
}

// contentType returns the Content-Type of the file name.
func contentType(name string) string {
	if t, ok := contentTypes[strings.ToLower(path.Ext(name))]; ok {
		return t
	}
	return "application/octet-stream"
}

// pollMs is the weft-poll-ms meta element's content for d: its
// milliseconds (at least 1) when positive, else empty (the defaults).
func pollMs(d time.Duration) string {
	if d <= 0 {
		return ""
	}
	return strconv.FormatInt(max(1, d.Milliseconds()), 10)
}
