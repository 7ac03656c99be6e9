package failover

import (
	"strings"
	"testing"
	"time"

	"github.com/otopcua/otopcua/tests/clientproc"
)

// This file holds what the client drills (client_drills_test.go) add to
// tests/clientproc, which runs the `otopcua client` CLI (the real binary
// as a child process, its stdout read live as JSON lines).

// The client's timings as the CLI's contract states them (its flag
// defaults); the drills pass them explicitly where they depend on them.
const (
	preferHold = 5 * time.Second // --prefer-hold
	lostAfter  = 3 * time.Second // --lost-after
)

// subscribeArgs are the CLI arguments (after `client`) of every drill:
// subscribe to i=2267, the given URLs in order, JSON lines, a 100 ms
// publishing interval, the hold named.
func subscribeArgs(urls ...string) []string {
	return []string{"subscribe", "i=2267", "-F", strings.Join(urls, ","), "--json", "--interval", "100ms", "--prefer-hold", preferHold.String()}
}

// isEvent matches an event of kind to the server with ApplicationUri to
// ("" for any).
func isEvent(kind, to string) func(clientproc.Line) bool {
	return func(l clientproc.Line) bool { return l.Type == kind && (to == "" || l.To.URI == to) }
}

// isNote matches a notification from server (ApplicationUri) whose value
// satisfies ok (nil for any).
func isNote(server string, ok func(byte) bool) func(clientproc.Line) bool {
	return func(l clientproc.Line) bool {
		v, isLevel := l.Level()
		return l.Type == clientproc.Notification && l.Server == server && (ok == nil || isLevel && ok(v))
	}
}

func levelIs(want byte) func(byte) bool { return func(v byte) bool { return v == want } }

// uriOf is the ApplicationUri of a rig node (procs.BaseConfig).
func uriOf(name string) string { return "urn:" + name + ":otopcua" }

// TestClientLineMatchers: isNote and isEvent match the lines of the CLI's
// contract they name, and no other.
func TestClientLineMatchers(t *testing.T) {
	parse := func(s string) clientproc.Line {
		t.Helper()
		l, err := clientproc.ParseLine([]byte(s), time.Now())
		if err != nil {
			t.Fatal(err)
		}
		return l
	}
	n := parse(`{"type":"notification","time":"2026-12-01T10:00:00.123456789Z","node":"i=2267","value":250,"dataType":"Byte","status":"Good","sourceTimestamp":"2026-12-01T10:00:00.1Z","server":"urn:a:otopcua","url":"opc.tcp://127.0.0.1:4840"}`)
	if !isNote("urn:a:otopcua", levelIs(250))(n) || isNote("urn:b:otopcua", nil)(n) || isNote("urn:a:otopcua", levelIs(240))(n) {
		t.Fatal("isNote does not match the notification as it should")
	}
	f := parse(`{"type":"failover","time":"2026-12-01T10:00:05.5Z","from":{"uri":"urn:a:otopcua","url":"opc.tcp://127.0.0.1:4840"},"to":{"uri":"urn:b:otopcua","url":"opc.tcp://127.0.0.1:4841"},"reason":"connection lost: EOF","interrupted":"2026-12-01T10:00:05.1Z","resumed":"2026-12-01T10:00:05.2234Z","failoverMs":123.4,"transferred":false}`)
	if !isEvent(clientproc.Failover, "urn:b:otopcua")(f) || isEvent(clientproc.Failover, "urn:a:otopcua")(f) || isEvent(clientproc.Connected, "")(f) {
		t.Fatal("isEvent does not match the failover as it should")
	}
	if isNote("urn:b:otopcua", nil)(f) || isEvent(clientproc.Failover, "")(n) {
		t.Fatal("a matcher of one type matches a line of the other")
	}
}
