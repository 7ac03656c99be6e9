// Package browser drives a headless Chromium from Go tests (through
// github.com/chromedp/chromedp) for the admin pages: it finds the
// browser, starts it with no network but loopback, and offers waiters that
// poll the page with a deadline instead of sleeping.
//
// Duties of a test using it:
//  1. Serve the pages on a loopback address (httptest.NewServer does).
//  2. Take one context per browser user from NewContext; it is cancelled,
//     and the browser closed, when the test ends.
//  3. Wait for what the page shows with WaitText / WaitAttr / WaitTrue,
//     never with a sleep.
package browser

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// ChromeEnv names an environment variable that, when set, is the browser
// binary to use instead of the one found on PATH.
const ChromeEnv = "OTOPCUA_CHROMIUM"

// Candidates are the browser names FindChrome looks for on PATH, in order.
var Candidates = []string{"chromium", "chromium-browser", "google-chrome", "google-chrome-stable"}

// FindChrome returns the path of the browser binary: $OTOPCUA_CHROMIUM, or
// the first of Candidates on PATH.
func FindChrome() (string, error) {
	if p := os.Getenv(ChromeEnv); p != "" {
		if _, err := exec.LookPath(p); err != nil {
			return "", fmt.Errorf("%s=%s is not an executable: %w", ChromeEnv, p, err)
		}
		return p, nil
	}
	for _, name := range Candidates {
		if p, err := exec.LookPath(name); err == nil {
			return p, nil
		}
	}
	return "", fmt.Errorf("no browser found: none of %s is on PATH; install Debian's chromium (apt-get install -y chromium, as scripts/test.sh does) or set %s",
		strings.Join(Candidates, ", "), ChromeEnv)
}

// PollEvery is how often the waiters look at the page.
const PollEvery = 50 * time.Millisecond

// NewContext starts a headless browser of its own (own profile in a
// temporary directory, so no cookie is shared with another NewContext) and
// returns its first tab's context, which ends after timeout. Non-loopback
// traffic is sent to a dead proxy and host names other than localhost do
// not resolve, so a page can reach nothing but loopback. The page's console
// messages and uncaught exceptions are written to the test log. The test fails at
// once when no browser is installed.
func NewContext(t testing.TB, timeout time.Duration) context.Context {
	t.Helper()
	path, err := FindChrome()
	if err != nil {
		t.Fatal(err)
	}
	profile := t.TempDir() // removed after the browser is closed (cleanups run last-in first-out)
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(path),
		chromedp.UserDataDir(profile),
		chromedp.WindowSize(1280, 900),
		chromedp.DisableGPU,
		chromedp.ProxyServer("http://127.0.0.1:9"), // discard port: nothing listens
		chromedp.Flag("host-resolver-rules", "MAP * ~NOTFOUND, EXCLUDE localhost, EXCLUDE 127.0.0.1, EXCLUDE [::1]"),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("no-pings", true),
	)
	if os.Geteuid() == 0 {
		opts = append(opts, chromedp.NoSandbox) // Chromium's sandbox refuses to run as root
	}
	allocCtx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	tabCtx, cancelTab := chromedp.NewContext(allocCtx)

	if err := chromedp.Do(tabCtx); err != nil { // starts the browser
		cancelTab()
		cancelAlloc()
		t.Fatalf("starting %s: %v", path, err)
	}
	// Log what the page's scripts throw or print, until the test ends.
	consoleCtx, stopConsole := context.WithCancel(tabCtx)
	messages := chromedp.Console(consoleCtx)
	var wg sync.WaitGroup
	wg.Go(func() {
		for m, err := range messages {
			if err != nil {
				return
			}
			t.Logf("browser console %s: %s (%s:%d)", m.Type, m.Text, m.URL, m.Line)
		}
	})
	ctx, cancel := context.WithTimeout(tabCtx, timeout)
	t.Cleanup(func() {
		stopConsole()
		wg.Wait() // no t.Logf after the test has ended
		cancel()
		cancelTab() // closes the browser and waits for it
		cancelAlloc()
	})
	return ctx
}

// Screenshot writes a PNG of the whole page to path.
func Screenshot(ctx context.Context, path string) error {
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100)) // 100: PNG; anything less is JPEG
	if err != nil {
		return fmt.Errorf("screenshot: %w", err)
	}
	return os.WriteFile(path, png, 0o644)
}

// Eval evaluates a JavaScript expression in the page and returns its value
// (JSON decoded into T).
func Eval[T any](ctx context.Context, expr string) (T, error) {
	return chromedp.Run(ctx, chromedp.Evaluate[T](expr))
}

// EvalAwait evaluates a JavaScript expression that yields a promise (a
// fetch, say) and returns what the promise resolves to.
func EvalAwait[T any](ctx context.Context, expr string) (T, error) {
	return chromedp.Run(ctx, chromedp.Evaluate[T](expr, chromedp.EvalAwaitPromise))
}

// Text returns the trimmed textContent of the first element sel matches,
// and false when none does.
func Text(ctx context.Context, sel string) (string, bool, error) {
	s, err := Eval[*string](ctx, "(function(){var e=document.querySelector("+jsString(sel)+");return e?e.textContent:null})()")
	if err != nil {
		return "", false, err
	}
	if s == nil {
		return "", false, nil
	}
	return strings.TrimSpace(*s), true, nil
}

// Attr returns attribute attr of the first element sel matches, and false
// when there is no such element or attribute.
func Attr(ctx context.Context, sel, attr string) (string, bool, error) {
	s, err := Eval[*string](ctx, "(function(){var e=document.querySelector("+jsString(sel)+");return e?e.getAttribute("+jsString(attr)+"):null})()")
	if err != nil {
		return "", false, err
	}
	if s == nil {
		return "", false, nil
	}
	return *s, true, nil
}

// WaitText waits until the trimmed text of sel equals want; after within
// it returns an error saying what the page showed instead.
func WaitText(ctx context.Context, sel, want string, within time.Duration) error {
	return poll(ctx, within, func() (bool, string, error) {
		got, ok, err := Text(ctx, sel)
		if !ok {
			return false, "no element " + sel, err
		}
		return got == want, fmt.Sprintf("text of %s is %q, want %q", sel, got, want), err
	})
}

// WaitAttr waits until attribute attr of sel equals want.
func WaitAttr(ctx context.Context, sel, attr, want string, within time.Duration) error {
	return poll(ctx, within, func() (bool, string, error) {
		got, ok, err := Attr(ctx, sel, attr)
		if !ok {
			return false, fmt.Sprintf("no attribute %s on %s", attr, sel), err
		}
		return got == want, fmt.Sprintf("%s of %s is %q, want %q", attr, sel, got, want), err
	})
}

// WaitTrue waits until the JavaScript expression expr is true.
func WaitTrue(ctx context.Context, expr string, within time.Duration) error {
	return poll(ctx, within, func() (bool, string, error) {
		ok, err := Eval[bool](ctx, "Boolean("+expr+")")
		return ok, expr + " is false", err
	})
}

// poll calls check every PollEvery until it reports true, the deadline
// passes or ctx ends. A JavaScript error while the page navigates is
// retried; the last one is reported.
func poll(ctx context.Context, within time.Duration, check func() (bool, string, error)) error {
	deadline := time.Now().Add(within)
	tick := time.NewTicker(PollEvery)
	defer tick.Stop()
	for {
		ok, state, err := check()
		if ok && err == nil {
			return nil
		}
		if err != nil {
			if ctx.Err() != nil {
				return fmt.Errorf("%s: %w", state, ctx.Err())
			}
			state = fmt.Sprintf("%s (%v)", state, err)
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("after %s: %s", within, state)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s: %w", state, ctx.Err())
		case <-tick.C:
		}
	}
}

// jsString quotes s as a JavaScript string literal.
func jsString(s string) string {
	b, err := json.Marshal(s)
	if err != nil {
		panic(errors.New("browser: a Go string always marshals to JSON"))
	}
	return string(b)
}
