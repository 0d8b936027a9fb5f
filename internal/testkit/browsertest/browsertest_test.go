package browsertest_test

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"github.com/weftrun/weft/internal/testkit/browsertest"
)

// page is a document under the CSP the Weft UI uses, so WaitFor is tested
// where chromedp.Poll cannot compile its predicate.
const page = `<!doctype html><html><head><title>t</title><link rel="icon" href="data:,">
<script src="/page.js"></script></head><body><p id="p">waiting</p></body></html>`

const script = `
console.log("hello from the page");
setTimeout(() => { document.getElementById("p").textContent = "ready"; }, 200);
window.fail = () => { console.error("boom"); };
window.throwLater = () => { setTimeout(() => { throw new Error("uncaught!"); }, 0); };
`

func serve(t *testing.T) string {
	t.Helper()
	mux := http.NewServeMux()
	mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Security-Policy", "default-src 'self'; script-src 'self'; img-src 'self' data:")
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		_, _ = w.Write([]byte(page))
	})
	mux.HandleFunc("GET /page.js", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/javascript")
		_, _ = w.Write([]byte(script))
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv.URL
}

// step returns a context for one step of a test, with a generous deadline.
func step(ctx context.Context, t *testing.T) context.Context {
	t.Helper()
	c, cancel := context.WithTimeout(ctx, 30*time.Second)
	t.Cleanup(cancel)
	return c
}

func TestBrowser(t *testing.T) {
	t.Parallel()
	url := serve(t)
	ctx, console := browsertest.New(t)

	require.NoError(t, chromedp.Do(step(ctx, t), chromedp.Navigate(url)))
	require.NoError(t, browsertest.WaitFor(step(ctx, t), `document.getElementById("p").textContent === "ready"`),
		"WaitFor works under a CSP without unsafe-eval")
	require.Empty(t, console.Errors(), "console.log is not an error")

	size, err := chromedp.Run(step(ctx, t), chromedp.Evaluate[[]int](`[window.innerWidth, window.innerHeight]`))
	require.NoError(t, err)
	require.Equal(t, []int{browsertest.Width, browsertest.Height}, size)

	require.NoError(t, chromedp.Do(step(ctx, t), chromedp.Evaluate[chromedp.Void](`fail(); throwLater(); undefined`)))
	require.NoError(t, waitUntil(step(ctx, t), func() bool { return len(console.Errors()) >= 2 }))
	errs := console.Errors()
	require.Contains(t, errs[0], "boom")
	require.Contains(t, errs[1], "uncaught!")

	shot := filepath.Join(t.TempDir(), "page.png")
	require.NoError(t, browsertest.Screenshot(step(ctx, t), shot))
	png, err := os.ReadFile(shot)
	require.NoError(t, err)
	require.True(t, bytes.HasPrefix(png, []byte("\x89PNG\r\n\x1a\n")), "the screenshot is a PNG")
}

func TestWaitForTimesOut(t *testing.T) {
	t.Parallel()
	url := serve(t)
	ctx, _ := browsertest.New(t)
	require.NoError(t, chromedp.Do(step(ctx, t), chromedp.Navigate(url)))

	short, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	defer cancel()
	err := browsertest.WaitFor(short, `document.title === "never"`)
	require.ErrorIs(t, err, context.DeadlineExceeded)
	require.ErrorContains(t, err, `document.title === "never"`)
}

func TestFindChromium(t *testing.T) {
	t.Setenv(browsertest.EnvChromium, filepath.Join(t.TempDir(), "no-such-browser"))
	_, err := browsertest.FindChromium()
	require.Error(t, err)
	require.ErrorContains(t, err, "apt-get install chromium")
	require.ErrorContains(t, err, "make browser")

	t.Setenv(browsertest.EnvChromium, "")
	path, err := browsertest.FindChromium()
	require.NoError(t, err, "the machine running the tests has a browser")
	require.FileExists(t, path)
}

// waitUntil polls cond until it holds or ctx ends.
func waitUntil(ctx context.Context, cond func() bool) error {
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for !cond() {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-tick.C:
		}
	}
	return nil
}
