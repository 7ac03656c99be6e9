package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/otopcua/otopcua/opcua/uaclient"
)

// readRoutes are the GET routes of the host's HTTP port that show plant
// data; without credentials every one answers 401 (Http:AnonymousRead is
// off on the soak host). /healthz, /readyz and /metrics stay open.
var readRoutes = []string{
	"/api/cluster/members", "/api/cluster/config", "/api/actors", "/api/deployment",
	"/alerts", "/api/localdb", "/api/historian", "/api/clusters", "/api/clusters/" + clusterID + "/redundancy",
}

// userSession opens a UserName session of name with password from the
// local address ip ("" lets the kernel choose) and closes it; it returns
// the outcome: "Good", the activation's status or what failed.
func userSession(ctx context.Context, endpoint, ip, name, password string) string {
	ch, err := uaclient.Dial(ctx, endpoint, uaclient.Options{DialTimeout: opTimeout, LocalIP: ip})
	if err != nil {
		return "channel: " + outcome(err)
	}
	defer ch.Close()
	s, err := uaclient.OpenSession(ctx, ch, uaclient.SessionParams{Name: "soak password", Timeout: time.Minute,
		CallTimeout: bcryptTimeout, User: &uaclient.UserName{Name: name, Password: password}})
	var refused *uaclient.ActivationError
	switch {
	case err == nil:
		_ = s.Close(ctx, opTimeout)
		return "Good"
	case errors.As(err, &refused):
		return statusName(refused.Code)
	}
	return outcome(err)
}

// httpFrom is an HTTP client whose connections come from the local
// address ip and that does not follow redirects (a login's 303 is its
// answer).
func httpFrom(ip string, keepAlive bool) *http.Client {
	d := &net.Dialer{Timeout: opTimeout}
	if ip != "" {
		d.LocalAddr = &net.TCPAddr{IP: net.ParseIP(ip)}
	}
	return &http.Client{
		Timeout:       bcryptTimeout,
		Transport:     &http.Transport{DialContext: d.DialContext, DisableKeepAlives: !keepAlive},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
}

// adminLogin posts the admin page's login form as a same-origin browser
// would and returns the outcome: the HTTP status ("303" signed in, "401",
// "429 Retry-After N") or what failed.
func adminLogin(ctx context.Context, c *http.Client, base, name, password string) string {
	form := url.Values{"name": {name}, "password": {password}}.Encode()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, base+"/login", strings.NewReader(form))
	if err != nil {
		return outcome(err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Origin", base)
	req.Header.Set("Sec-Fetch-Site", "same-origin")
	res, err := c.Do(req)
	if err != nil {
		return outcome(err)
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(res.Body, 64<<10))
	res.Body.Close()
	out := strconv.Itoa(res.StatusCode)
	if res.StatusCode == http.StatusTooManyRequests && res.Header.Get("Retry-After") == "" {
		out += " without Retry-After"
	}
	return out
}

// passwordTries bounds how often one wrong-password operation tries again
// when its address is refused a channel or a session before the password
// is checked (the other abusers of 127.0.0.2 hold its per-address
// allowances): the attacker insists until the password itself is refused.
const passwordTries = 10

// wrongPasswordOPCUA tries a wrong password for the Operator on OPC UA;
// every try is counted.
func (a *Abuse) wrongPasswordOPCUA(ctx context.Context, r *rand.Rand) {
	for range passwordTries {
		got := userSession(ctx, a.Endpoint, passwordIP, a.Hardening.User, wrongPassword(r))
		a.noteOutcome(ctx, abuserOPCUAPassword, got)
		if !refusedBeforeThePassword(got) || ended(ctx) {
			return
		}
		pause(ctx, 100*time.Millisecond)
	}
}

// refusedBeforeThePassword: the try ended before the password was
// checked, for want of a connection or a session of its address.
func refusedBeforeThePassword(got string) bool {
	return strings.HasPrefix(got, "channel: ") || got == "BadTooManySessions"
}

// wrongPasswordAdmin tries a wrong password for the Operator on the
// admin page's login.
func (a *Abuse) wrongPasswordAdmin(c *http.Client) func(context.Context, *rand.Rand) {
	return func(ctx context.Context, r *rand.Rand) {
		a.noteOutcome(ctx, abuserAdminPassword, adminLogin(ctx, c, a.Hardening.HTTP, a.Hardening.User, wrongPassword(r)))
	}
}

func wrongPassword(r *rand.Rand) string { return fmt.Sprintf("wrong password %d", r.Uint32()) }

// unauthenticatedRead GETs the next read route without credentials.
func (a *Abuse) unauthenticatedRead(c *http.Client) func(context.Context, *rand.Rand) {
	next := 0
	return func(ctx context.Context, _ *rand.Rand) {
		path := readRoutes[next%len(readRoutes)]
		next++
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, a.Hardening.HTTP+path, nil)
		if err != nil {
			a.note(ctx, abuserHTTPRead, "", err)
			return
		}
		res, err := c.Do(req)
		if err != nil {
			a.note(ctx, abuserHTTPRead, "", err)
			return
		}
		_, _ = io.Copy(io.Discard, io.LimitReader(res.Body, 64<<10))
		res.Body.Close()
		a.noteOutcome(ctx, abuserHTTPRead, strconv.Itoa(res.StatusCode))
	}
}

// noteOutcome counts an outcome already named; one the end of the abuse
// interrupted is counted as cutShort.
func (a *Abuse) noteOutcome(ctx context.Context, name, got string) {
	if got != "Good" && ended(ctx) {
		got = cutShort
	}
	a.Tally.Saw(name, got)
}
