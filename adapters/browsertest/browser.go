// Package browsertest looks at chash's pages as a person does: in headless
// Chromium (Debian's chromium package), driven with chromedp. Its tests
// load the status page of a running service (package status) and a report
// of the chash command, and assert on the rendered DOM: every member
// there, the numbers equal to the JSON, no script error in the console and
// nothing fetched from anywhere but the page's own server. Screenshots go
// to $CHASH_ARTIFACTS (default: a temporary directory). cmd/screenshots
// regenerates the pictures in the repository's docs/.
//
// The module is not published: only its tests and tool use it.
package browsertest

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"os/exec"
	"sync"
	"time"

	"github.com/chromedp/cdproto/fetch"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"
)

// ErrNoChromium reports that no Chromium executable was found.
var ErrNoChromium = errors.New("browsertest: no chromium: install Debian's chromium package or set CHASH_CHROMIUM")

// Chromium returns the path of the Chromium to drive: $CHASH_CHROMIUM, or
// the first of chromium, chromium-browser and google-chrome on the PATH.
func Chromium() (string, error) {
	if p := os.Getenv("CHASH_CHROMIUM"); p != "" {
		return p, nil
	}
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p, nil
		}
	}
	return "", ErrNoChromium
}

// Browser is one headless Chromium with a fresh, empty profile.
type Browser struct {
	ctx     context.Context
	cancel  context.CancelFunc
	profile string
}

// Start launches Chromium with the flags that work on a machine with no
// network beyond loopback (no background networking, component updates,
// sync or QUIC), as root (no sandbox), in a temporary profile that Close
// removes.
func Start(ctx context.Context, width, height int) (*Browser, error) {
	path, err := Chromium()
	if err != nil {
		return nil, err
	}
	profile, err := os.MkdirTemp("", "chash-chromium-")
	if err != nil {
		return nil, err
	}
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(path),
		chromedp.Headless,
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.NoFirstRun,
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("hide-scrollbars", true),
		chromedp.UserDataDir(profile),
		chromedp.WindowSize(width, height),
	)
	actx, acancel := chromedp.NewExecAllocator(ctx, opts...)
	bctx, bcancel := chromedp.NewContext(actx)
	if err := chromedp.Do(bctx); err != nil { // starts the browser
		bcancel()
		acancel()
		os.RemoveAll(profile)
		return nil, fmt.Errorf("browsertest: start %s: %w", path, err)
	}
	return &Browser{ctx: bctx, profile: profile, cancel: func() { bcancel(); acancel() }}, nil
}

// Close stops the browser and removes its profile.
func (b *Browser) Close() {
	b.cancel()
	os.RemoveAll(b.profile)
}

// Tab is a page loaded in its own tab, with what it did while loading.
type Tab struct {
	origin string // scheme://host:port of the page
	ctx    context.Context
	cancel context.CancelFunc
	done   sync.WaitGroup

	mu       sync.Mutex
	requests []string // every URL the page asked for
	blocked  []string // those refused: not on loopback
	problems []string // console errors, uncaught exceptions, log errors
}

// Open loads rawURL, which must be on a loopback host, in a new tab and
// waits for its body. Every request the page makes is intercepted before
// it is sent: those to rawURL's own origin (and data:, blob: and about:
// URLs) go through; any other, even to another loopback port, is failed
// and recorded in Blocked, so no test page can reach off the machine. Console errors and
// warnings, uncaught exceptions and browser log errors (such as a Content
// Security Policy violation or a failed load) are recorded in Problems.
func (b *Browser) Open(rawURL string) (*Tab, error) {
	u, err := url.Parse(rawURL)
	if err != nil || !isLoopback(u) {
		return nil, fmt.Errorf("browsertest: open %s: not a loopback URL", rawURL)
	}
	ctx, cancel := chromedp.NewContext(b.ctx)
	t := &Tab{ctx: ctx, cancel: cancel, origin: u.Scheme + "://" + u.Host}
	fail := func(err error) (*Tab, error) {
		t.Close()
		return nil, fmt.Errorf("browsertest: open %s: %w", rawURL, err)
	}
	if err := chromedp.Do(ctx); err != nil { // attaches the tab
		return fail(err)
	}
	messages := chromedp.Console(ctx)
	paused := chromedp.Events(ctx, fetch.RequestPaused)
	if _, err := chromedp.Call(ctx, fetch.Enable, fetch.EnableParams{Patterns: []*fetch.RequestPattern{{URLPattern: "*"}}}); err != nil {
		return fail(err)
	}
	t.done.Add(2)
	go func() {
		defer t.done.Done()
		for m, err := range messages {
			if err != nil {
				return
			}
			switch m.Type {
			case chromedp.ConsoleError, chromedp.ConsoleException, chromedp.ConsoleWarning:
				t.problem("console %s: %s (%s:%d)", m.Type, m.Text, m.URL, m.Line+1)
			}
		}
	}()
	go func() {
		defer t.done.Done()
		for ev, err := range paused {
			if err != nil {
				return
			}
			t.intercept(ev)
		}
	}()
	if err := chromedp.Do(ctx, chromedp.Navigate(rawURL), chromedp.WaitReady("body")); err != nil {
		return fail(err)
	}
	return t, nil
}

// intercept lets a local request through and fails any other.
func (t *Tab) intercept(ev fetch.EventRequestPaused) {
	u := ev.Request.URL
	local := t.allowed(u)
	t.mu.Lock()
	t.requests = append(t.requests, u)
	if !local {
		t.blocked = append(t.blocked, u)
	}
	t.mu.Unlock()
	if local {
		_, _ = chromedp.Call(t.ctx, fetch.ContinueRequest, fetch.ContinueRequestParams{RequestID: ev.RequestID})
		return
	}
	_, _ = chromedp.Call(t.ctx, fetch.FailRequest, fetch.FailRequestParams{RequestID: ev.RequestID, ErrorReason: network.ErrorReasonBlockedByClient})
}

func (t *Tab) problem(format string, a ...any) {
	t.mu.Lock()
	t.problems = append(t.problems, fmt.Sprintf(format, a...))
	t.mu.Unlock()
}

// allowed reports whether a request stays with the page: its own origin,
// or a data:, blob: or about: URL.
func (t *Tab) allowed(raw string) bool {
	u, err := url.Parse(raw)
	if err != nil {
		return false
	}
	switch u.Scheme {
	case "data", "blob", "about":
		return true
	}
	return u.Scheme+"://"+u.Host == t.origin && isLoopback(u)
}

// isLoopback reports whether u's host is localhost or a loopback address.
func isLoopback(u *url.URL) bool {
	if u.Scheme != "http" && u.Scheme != "https" {
		return false
	}
	host := u.Hostname()
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// Requests returns every URL the page asked for.
func (t *Tab) Requests() []string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return append([]string(nil), t.requests...)
}

// Blocked returns the requests that were refused because they would have
// left the machine.
func (t *Tab) Blocked() []string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return append([]string(nil), t.blocked...)
}

// Problems returns the console errors and warnings, exceptions and log
// errors seen so far.
func (t *Tab) Problems() []string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return append([]string(nil), t.problems...)
}

// Eval evaluates a JavaScript expression in the page through the DevTools
// protocol (the page itself runs no script) and returns its value as
// JSON.
func (t *Tab) Eval(expr string) ([]byte, error) {
	return chromedp.Run(t.ctx, chromedp.Evaluate[[]byte](expr))
}

// Screenshot writes a PNG of the whole page to path.
func (t *Tab) Screenshot(path string) error {
	png, err := chromedp.Run(t.ctx, chromedp.FullScreenshot(100))
	if err != nil {
		return err
	}
	return os.WriteFile(path, png, 0o644)
}

// Settle waits briefly for late events (console messages, requests) to
// arrive before they are read.
func (t *Tab) Settle() { time.Sleep(300 * time.Millisecond) }

// Close closes the tab.
func (t *Tab) Close() {
	t.cancel()
	t.done.Wait()
}
