package browser

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/chromedp/chromedp"
)

// Login opens baseURL+"/login", logs in as name and waits until the
// browser has left the login page. It returns the login page's error
// message when the login is refused.
func Login(ctx context.Context, baseURL, name, password string, within time.Duration) error {
	err := chromedp.Do(ctx,
		chromedp.Navigate(strings.TrimRight(baseURL, "/")+"/login"),
		chromedp.WaitVisible(chromedp.CSS("#name")),
		chromedp.SendKeys(chromedp.CSS("#name"), name),
		chromedp.SendKeys(chromedp.CSS("#password"), password),
		chromedp.Click(chromedp.CSS("#login-submit")),
	)
	if err != nil {
		return fmt.Errorf("login form: %w", err)
	}
	err = WaitTrue(ctx, `location.pathname !== "/login" || document.getElementById("login-error") !== null`, within)
	if err != nil {
		return fmt.Errorf("login as %s: %w", name, err)
	}
	if msg, ok, _ := Text(ctx, "#login-error"); ok {
		return fmt.Errorf("login as %s refused: %s", name, msg)
	}
	return nil
}

// Open navigates to baseURL+path and waits until the document has loaded.
func Open(ctx context.Context, baseURL, path string) error {
	return chromedp.Do(ctx,
		chromedp.Navigate(strings.TrimRight(baseURL, "/")+path),
		chromedp.WaitReady(chromedp.CSS("body")),
	)
}

// Click clicks the first element the CSS selector sel matches, waiting
// for it to be visible.
func Click(ctx context.Context, sel string) error {
	return chromedp.Do(ctx, chromedp.Click(chromedp.CSS(sel)))
}
