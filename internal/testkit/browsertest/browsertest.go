// Package browsertest runs headless Chromium for Go tests that drive a web
// UI through github.com/chromedp/chromedp.
//
// New finds the browser (WEFT_CHROMIUM, else chromium, chromium-browser or
// google-chrome on PATH) and fails the test, never skips it, when there is
// none: a browser test that does not run must not pass. `make browser` (or
// .ci/ensure-chromium) installs Debian's chromium package.
//
// Each call starts its own browser, so tests using it may run in parallel
// and share no cookies or storage.
package browsertest

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"
)

// EnvChromium names the environment variable holding the browser to run: a
// path, or a command name looked up on PATH.
const EnvChromium = "WEFT_CHROMIUM"

// Candidates are the command names tried on PATH, in order, when
// EnvChromium is not set. .ci/ensure-chromium searches the same names.
var Candidates = []string{"chromium", "chromium-browser", "google-chrome"}

// Width and Height are the size of the browser window.
const (
	Width  = 1440
	Height = 900
)

// InstallHint tells how to get a browser; the failure of a test that found
// none says it.
const InstallHint = "install Chromium for the browser tests: `make browser`, " +
	"or `apt-get install chromium` (Debian/Ubuntu), or set " + EnvChromium + " to a Chromium or Chrome binary"

// Console collects what the page wrote to its console. Errors holds the
// console.error calls, the uncaught exceptions and unhandled rejections, and
// the browser's error log entries (a failed network request is one). It is
// safe for concurrent use.
type Console struct {
	mu     sync.Mutex
	errors []string
}

// Errors returns the error messages seen so far.
func (c *Console) Errors() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]string(nil), c.errors...)
}

func (c *Console) add(msg string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.errors = append(c.errors, msg)
}

// RequireNoErrors fails t when the page wrote any error to its console.
func (c *Console) RequireNoErrors(t testing.TB) {
	t.Helper()
	if errs := c.Errors(); len(errs) > 0 {
		t.Fatalf("the browser console has %d error(s):\n  %s", len(errs), strings.Join(errs, "\n  "))
	}
}

// FindChromium returns the path of the browser New would run, or an error
// that says how to install one.
func FindChromium() (string, error) {
	if name := os.Getenv(EnvChromium); name != "" {
		p, err := exec.LookPath(name)
		if err != nil {
			return "", fmt.Errorf("%s=%q is not an executable: %w; %s", EnvChromium, name, err, InstallHint)
		}
		return p, nil
	}
	for _, name := range Candidates {
		if p, err := exec.LookPath(name); err == nil {
			return p, nil
		}
	}
	return "", fmt.Errorf("no Chromium found (%s unset; none of %s on PATH); %s",
		EnvChromium, strings.Join(Candidates, ", "), InstallHint)
}

// New starts a headless browser with one tab and returns the tab's chromedp
// context and its Console. The browser runs with the flags a root user in a
// container needs (--no-sandbox, --headless=new, --disable-dev-shm-usage,
// --disable-gpu) in a Width×Height window and viewport. Every console message is logged
// with t.Log; errors are also kept in the Console. The browser stops in
// t.Cleanup. Without a browser, New fails the test with InstallHint.
//
// Derive a context with a timeout from the returned one for each step;
// never put a deadline on the returned context itself, which is the
// browser's lifetime.
func New(t testing.TB) (context.Context, *Console) {
	t.Helper()
	path, err := FindChromium()
	if err != nil {
		t.Fatal(err)
	}

	opts := append(slices.Clone(chromedp.DefaultExecAllocatorOptions[:]),
		chromedp.ExecPath(path),
		chromedp.Flag("headless", "new"),
		chromedp.NoSandbox,
		chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.Flag("disable-gpu", true),
		chromedp.Flag("lang", "en-US"),
		chromedp.WindowSize(Width, Height),
	)
	// The browser lives until Cleanup, which runs after t.Context is done,
	// so it does not hang off t.Context.
	allocCtx, cancelAlloc := chromedp.NewExecAllocator(context.WithoutCancel(t.Context()), opts...)
	ctx, cancel := chromedp.NewContext(allocCtx, chromedp.WithErrorf(t.Logf))

	// The first Run starts the browser; the viewport, not just the window,
	// is then Width×Height (a headless window keeps room for browser UI).
	if err := chromedp.Do(ctx, chromedp.EmulateViewport(Width, Height)); err != nil {
		cancel()
		cancelAlloc()
		t.Fatalf("starting %s: %v", path, err)
	}

	console := &Console{}
	logCtx, stopLog := context.WithCancel(ctx)
	messages := chromedp.Console(logCtx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for m, err := range messages {
			if err != nil {
				return
			}
			line := describe(m)
			t.Log("browser console: " + line)
			if m.Type == chromedp.ConsoleError || m.IsException() {
				console.add(line)
			}
		}
	}()

	t.Cleanup(func() {
		stopLog()
		<-done
		if err := chromedp.Cancel(ctx); err != nil && !errors.Is(err, context.Canceled) {
			t.Logf("closing the browser: %v", err)
		}
		cancel()
		cancelAlloc()
	})
	return ctx, console
}

// describe renders a console message with where it came from.
func describe(m chromedp.ConsoleMessage) string {
	s := m.String()
	if m.URL != "" {
		s += fmt.Sprintf(" (%s:%d)", m.URL, m.Line+1)
	}
	return s
}

// Screenshot scrolls to the top and writes a PNG of the whole page, beyond
// the window, to path.
func Screenshot(ctx context.Context, path string) error {
	if err := chromedp.Do(ctx, chromedp.Evaluate[chromedp.Void](`window.scrollTo(0, 0)`)); err != nil {
		return fmt.Errorf("scrolling to the top: %w", err)
	}
	png, err := chromedp.Run(ctx, func(ctx context.Context, t *chromedp.Target) ([]byte, error) {
		m, err := cdp.Call(ctx, t, page.GetLayoutMetrics, cdp.Empty{})
		if err != nil {
			return nil, fmt.Errorf("reading the page size: %w", err)
		}
		clip := &page.Viewport{Width: Width, Height: Height, Scale: 1}
		if size := m.CSSContentSize; size != nil {
			clip.Width, clip.Height = size.Width, size.Height
		}
		beyond, fromSurface := true, true
		r, err := cdp.Call(ctx, t, page.CaptureScreenshot, page.CaptureScreenshotParams{
			Format:                page.CaptureScreenshotFormatPng,
			Clip:                  clip,
			CaptureBeyondViewport: &beyond,
			FromSurface:           &fromSurface,
		})
		if err != nil {
			return nil, err
		}
		return r.Data, nil
	})
	if err != nil {
		return fmt.Errorf("taking a screenshot: %w", err)
	}
	if err := os.WriteFile(path, png, 0o644); err != nil {
		return fmt.Errorf("writing the screenshot: %w", err)
	}
	return nil
}

// PollInterval is how often WaitFor evaluates its condition.
const PollInterval = 50 * time.Millisecond

// WaitFor evaluates the JavaScript expression in the page until it is
// truthy, and fails when ctx ends first, with the expression, the last
// value and the last evaluation error. Unlike chromedp.Poll, it compiles no
// code inside the page, so it works under a Content-Security-Policy that
// forbids eval.
func WaitFor(ctx context.Context, expression string) error {
	wrapped := "(() => { try { return Boolean(" + expression + "); } catch (e) { return 'threw: ' + e; } })()"
	var last any
	var lastErr error
	tick := time.NewTicker(PollInterval)
	defer tick.Stop()
	for {
		v, err := chromedp.Run(ctx, chromedp.Evaluate[any](wrapped))
		if err == nil && v == true {
			return nil
		}
		last, lastErr = v, err
		select {
		case <-ctx.Done():
			if lastErr != nil {
				return fmt.Errorf("waiting for %s: %w (last error: %w)", expression, ctx.Err(), lastErr)
			}
			return fmt.Errorf("waiting for %s: %w (last value %v)", expression, ctx.Err(), last)
		case <-tick.C:
		}
	}
}
