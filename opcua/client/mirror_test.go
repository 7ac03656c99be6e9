package client

import (
	"context"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gopcua/opcua/ua"

	"github.com/otopcua/otopcua/internal/poll"
	"github.com/otopcua/otopcua/opcua"
	"github.com/otopcua/otopcua/opcua/uaclient"
	"github.com/otopcua/otopcua/opcua/uaserver"
)

// TestMirroredReconnectActivatesTheSameSession: a single URL (a floating
// address) whose connection breaks; in mirrored mode the client activates
// the same session on a new channel, republishes what it missed and goes
// on: every counter value once, no warm fallback, nothing re-created.
func TestMirroredReconnectActivatesTheSameSession(t *testing.T) {
	set := startSet(t, false, map[string]byte{"urn:a": 250}, "urn:a")
	startCounter(t, 20*time.Millisecond, 0, set["urn:a"])
	gate := newGate(t, set["urn:a"].Addr().String())
	gate.open()
	rec := &recorder{}
	c := dial(t, rec, Options{URLs: []string{gate.url()}, Mode: ModeMirrored, MaxBackoff: 200 * time.Millisecond})
	sub, err := c.SubscribeSampled(context.Background(), []*ua.NodeID{counterNode}, 50*time.Millisecond, 0)
	if err != nil {
		t.Fatal(err)
	}
	v := collect(t, sub)
	v.untilFrom(t, "urn:a", 20)
	gate.cut()
	poll.CheckFor(t, 3*time.Second, 10*time.Millisecond, poll.True("lost event", func() bool { return len(rec.events(EventLost)) == 1 }))
	v.mu.Lock()
	before := len(v.got)
	v.mu.Unlock()
	gate.open()
	v.untilFrom(t, "urn:a", before+30)
	if err := v.contiguous(); err != nil {
		t.Fatal(err)
	}
	poll.CheckFor(t, 2*time.Second, 10*time.Millisecond, poll.True("failover event", func() bool { return len(rec.events(EventFailover)) == 1 }))
	e := rec.events(EventFailover)[0]
	if e.Mode != ModeMirrored || e.Fallback != "" || e.Transferred || e.FailoverTime <= 0 {
		t.Fatalf("failover event %+v, want mirrored without fallback", e)
	}
	t.Logf("mirrored reconnect: failover time %v", e.FailoverTime)
}

// TestMirroredFallsBackToWarmWhenRefused: servers that do not mirror
// refuse the session of another (BadSessionIdInvalid); the client takes
// the warm path there, says so in the event, and the values go on.
func TestMirroredFallsBackToWarmWhenRefused(t *testing.T) {
	set := startSet(t, false, map[string]byte{"urn:a": 250, "urn:b": 240}, "urn:a", "urn:b")
	startCounter(t, 20*time.Millisecond, 0, set["urn:a"], set["urn:b"])
	rec := &recorder{}
	c := dial(t, rec, Options{URLs: []string{set["urn:a"].EndpointURL(), set["urn:b"].EndpointURL()}, Mode: ModeMirrored})
	sub, err := c.SubscribeSampled(context.Background(), []*ua.NodeID{counterNode}, 50*time.Millisecond, 0)
	if err != nil {
		t.Fatal(err)
	}
	v := collect(t, sub)
	v.untilFrom(t, "urn:a", 10)
	set["urn:a"].Close()
	v.untilFrom(t, "urn:b", 10)
	poll.CheckFor(t, 2*time.Second, 10*time.Millisecond, poll.True("failover event", func() bool { return len(rec.events(EventFailover)) == 1 }))
	e := rec.events(EventFailover)[0]
	if e.Mode != ModeMirrored || !strings.Contains(e.Fallback, "BadSessionIDInvalid") && !strings.Contains(e.Fallback, "BadSessionIdInvalid") {
		t.Fatalf("failover event %+v, want a mirrored one that fell back for BadSessionIdInvalid", e)
	}
}

// TestSeqSetDropsWhatWasDelivered: out of order is fine, twice is not,
// and the numbers wrap.
func TestSeqSetDropsWhatWasDelivered(t *testing.T) {
	var q seqSet
	for _, c := range []struct {
		n    uint32
		want bool
	}{{5, true}, {7, true}, {6, true}, {6, false}, {7, false}, {8, true}, {5, false}} {
		if got := q.add(c.n); got != c.want {
			t.Fatalf("add(%d) = %v, want %v", c.n, got, c.want)
		}
	}
	q = seqSet{}
	for _, n := range []uint32{0xFFFFFFFE, 0xFFFFFFFF, 0, 1} {
		if !q.add(n) {
			t.Fatalf("add(%#x) refused across the wrap", n)
		}
	}
	if q.add(0xFFFFFFFF) {
		t.Fatal("a number from before the wrap was taken twice")
	}
	q = seqSet{}
	for n := uint32(1); n < 10*seqKeep; n++ {
		q.add(n)
	}
	if len(q.seen) > 2*seqKeep+1 {
		t.Fatalf("%d sequence numbers remembered, want at most %d", len(q.seen), 2*seqKeep+1)
	}
}

// TestMirroredSecuredUserSessionIsActivatedAgain: on a Basic256Sha256
// SignAndEncrypt channel with a UserName token, the reactivation passes
// otopcua's own checks: the client signature over the certificate of
// CreateSession and the last nonce, the password encrypted anew with that
// nonce (the server checks it a second time).
func TestMirroredSecuredUserSessionIsActivatedAgain(t *testing.T) {
	var mu sync.Mutex
	var checked []string
	set := startSetWith(t, false, map[string]byte{"urn:a": 250}, func(uri string, c *opcua.Config) {
		c.Security.Certificate, c.Security.PrivateKey = certificate(t, uri)
		c.Security.Endpoints = []uaserver.EndpointSecurity{{PolicyURI: ua.SecurityPolicyURIBasic256Sha256, Mode: ua.MessageSecurityModeSignAndEncrypt}}
		c.Security.ValidateClientCertificate = func([]byte, string) error { return nil }
		c.Users = directory{server: uri, checked: &checked, mu: &mu}
		c.Authorization = map[string]uaserver.Rights{"Operator": uaserver.AllRights}
	}, "urn:a")
	startCounter(t, 20*time.Millisecond, 0, set["urn:a"])
	gate := newGate(t, set["urn:a"].Addr().String())
	gate.open()
	cert, key := certificate(t, "urn:otopcua:client")
	rec := &recorder{}
	c := dial(t, rec, Options{URLs: []string{gate.url()}, Mode: ModeMirrored, MaxBackoff: 200 * time.Millisecond, NoDiscovery: true,
		User: &uaclient.UserName{Name: "otto", Password: "otto-password"},
		Security: &Security{PolicyURI: ua.SecurityPolicyURIBasic256Sha256, Mode: ua.MessageSecurityModeSignAndEncrypt,
			Certificate: cert, PrivateKey: key, TrustServer: func(string, []byte) error { return nil }}})
	sub, err := c.SubscribeSampled(context.Background(), []*ua.NodeID{counterNode}, 50*time.Millisecond, 0)
	if err != nil {
		t.Fatal(err)
	}
	v := collect(t, sub)
	v.untilFrom(t, "urn:a", 10)
	gate.cut()
	poll.CheckFor(t, 3*time.Second, 10*time.Millisecond, poll.True("lost event", func() bool { return len(rec.events(EventLost)) == 1 }))
	v.mu.Lock()
	before := len(v.got)
	v.mu.Unlock()
	gate.open()
	v.untilFrom(t, "urn:a", before+20)
	if err := v.contiguous(); err != nil {
		t.Fatal(err)
	}
	poll.CheckFor(t, 2*time.Second, 10*time.Millisecond, poll.True("failover event", func() bool { return len(rec.events(EventFailover)) == 1 }))
	if e := rec.events(EventFailover)[0]; e.Fallback != "" || e.Security != "Basic256Sha256:SignAndEncrypt" {
		t.Fatalf("failover event %+v, want a secured mirrored one without fallback", e)
	}
	mu.Lock()
	defer mu.Unlock()
	// Dial, the reconnect's own watch session, and the reactivation.
	if n := len(slices.DeleteFunc(slices.Clone(checked), func(s string) bool { return s != "urn:a otto/otto-password" })); n != 3 || len(checked) != 3 {
		t.Fatalf("password checks %q, want otto's three times (Dial, the new watch session, the reactivation)", checked)
	}
}

// A gap that another Publish loop is about to fill is waited for, not
// republished; one that stays is reported after the wait.
func TestAwaitSeqWaitsForAnotherLoop(t *testing.T) {
	s := &userSub{}
	s.seqs.add(1)
	go func() {
		time.Sleep(10 * time.Millisecond)
		s.mu.Lock()
		s.seqs.add(2)
		s.mu.Unlock()
	}()
	if !s.awaitSeq(2, time.Second) {
		t.Fatal("message 2, delivered 10 ms later, was not waited for")
	}
	start := time.Now()
	if s.awaitSeq(3, 20*time.Millisecond) {
		t.Fatal("message 3 was never delivered")
	}
	if d := time.Since(start); d < 20*time.Millisecond {
		t.Fatalf("gave up on message 3 after %v, before the 20 ms wait", d)
	}
}
