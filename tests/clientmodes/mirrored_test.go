package clientmodes

import (
	"context"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gopcua/opcua/ua"

	"github.com/otopcua/otopcua/internal/testcert"
	"github.com/otopcua/otopcua/opcua/uaclient"
	"github.com/otopcua/otopcua/tests/clientproc"
	"github.com/otopcua/otopcua/tests/procs"
)

// TestMirroredSurvivesSIGKILLs: nodes that say HotAndMirrored make
// `--mode auto` choose mirrored; over N SIGKILLs of the node the client
// is on, the client activates its session on the survivor (no fall back
// to Warm), republishes what it missed, and every counter value reaches
// the application exactly once.
func TestMirroredSurvivesSIGKILLs(t *testing.T) {
	r := StartRig(t, RigOptions{RedundancySupport: "HotAndMirrored"})
	res := r.Trials(Drill{Mode: "auto", WantMode: "mirrored", Trials: *trials, Mirrored: true})
	check(t, res, *trials)
}

// TestMirroredFollowsManualFailovers: an Administrator's manual failover
// makes the Primary show ServiceLevel 0 while it still serves; a client
// in mirrored mode moves on that planned move as on a failure — the same
// session, activated on the other node, which republishes what the client
// did not receive — and every counter value reaches the application
// exactly once (a new subscription would deliver the current value a
// second time).
func TestMirroredFollowsManualFailovers(t *testing.T) {
	r := StartRig(t, RigOptions{RedundancySupport: "HotAndMirrored"})
	token := procs.AddUser(t, r.Cfgs["a"], "ops", "Administrator", secPassword)
	for _, n := range r.Nodes {
		n.Token = token
	}
	res := r.Trials(Drill{Mode: "mirrored", Trials: *trials, Mirrored: true, ManualFailover: true})
	check(t, res, *trials)
}

// TestMirroredPlannedMovesDeliverEachValueOnce: the Primary, still
// serving, shows a healthy but lower ServiceLevel (220, by the test hook)
// and the client in mirrored mode moves to the node at 240 after its
// prefer-hold; when the level comes back it moves back. Both are planned
// moves between servers that both serve: the client takes its session
// along (no new subscription, which would deliver the current value a
// second time), and every counter value reaches the application once.
func TestMirroredPlannedMovesDeliverEachValueOnce(t *testing.T) {
	r := StartRig(t, RigOptions{RedundancySupport: "HotAndMirrored", TestHooks: true})
	primary := r.WaitWhole(60 * time.Second)
	p, s := r.Nodes[primary], r.Nodes[other(primary)]
	urls := r.Nodes["a"].Endpoint() + "," + r.Nodes["b"].Endpoint()
	c := clientproc.Start(t, "subscribe", r.Node, "-F", urls, "--json", "--mode", "mirrored", "--interval", "100ms",
		"--sampling-interval", "0", "--no-discovery", "--prefer-hold", "1s")
	res := Result{Client: c}
	takeovers := map[string]int{}
	move := func(to *procs.Node, level string) {
		t.Helper()
		WaitMirrorReady(t, to, 1)
		waitMetricAtLeast(t, to, `otopcua_mirror_sessions{role="served"}`, 1) // the client's watch session there
		mark := c.Next()
		r.PinLevel(p, level)
		ev := c.WaitFor(30*time.Second, mark, "a planned move to "+to.Name, func(l clientproc.Line) bool {
			return l.Type == clientproc.Failover && l.To.URI == URI(to.Name)
		})
		if !strings.Contains(ev.Reason, "held ServiceLevel") || ev.Mode != "mirrored" || ev.Fallback != "" || ev.Transferred || !ev.HasMs {
			t.Fatalf("move event %s, want a planned mirrored move (outranked) without a fall back to Warm", ev.Raw)
		}
		took := time.Duration(ev.FailoverMs * float64(time.Millisecond))
		res.FailoverTimes = append(res.FailoverTimes, took)
		t.Logf("ServiceLevel of %s %s: moved to %s in %v: %s", p.Name, level, to.Name, took, ev.Reason)
		// The session itself moved: the node took it over.
		takeovers[to.Name]++
		waitMetricAtLeast(t, to, `otopcua_mirror_takeovers_total{result="ok"}`, float64(takeovers[to.Name]))
		tenValuesSince(t, c, ev.Seq, URI(to.Name))
	}
	c.WaitFor(30*time.Second, 0, "a counter value from the Primary "+primary, isValueFrom(URI(primary)))
	for range *trials {
		move(s, "220")
		move(p, "runtime")
	}
	res.Values, res.Others = values(c.All())
	check(t, res, 2**trials)
}

// secured is the policy and mode of the secured drills.
const secured = "Basic256Sha256:SignAndEncrypt"

// The user of the secured drill.
const (
	secUser     = "otto"
	secPassword = "correct horse battery staple"
)

// securePair starts a HotAndMirrored pair with Basic256Sha256
// SignAndEncrypt endpoints, each node with its own certificate and a PKI
// directory that trusts the drill's client certificate, and the user otto
// in the shared Config DB. It returns the client's certificate and key
// files, and the DER and key.
func securePair(t *testing.T) (r *Rig, certFile, keyFile string, der []byte, key *rsa.PrivateKey) {
	t.Helper()
	dir := t.TempDir()
	der, key = testcert.RSA(t, "urn:drill:otopcua:client", 2048)
	certFile, keyFile = filepath.Join(dir, "client.der"), filepath.Join(dir, "client-key.pem")
	if err := os.WriteFile(certFile, der, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(key)}), 0o600); err != nil {
		t.Fatal(err)
	}
	r = StartRig(t, RigOptions{RedundancySupport: "HotAndMirrored", Edit: func(name string, cfg map[string]any) {
		pkiDir := filepath.Join(dir, "pki-"+name)
		trusted := filepath.Join(pkiDir, "trusted", "certs")
		if err := os.MkdirAll(trusted, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(trusted, "drill-client.der"), der, 0o644); err != nil {
			t.Fatal(err)
		}
		cfg["OpcUa"].(map[string]any)["Security"] = map[string]any{
			"Policies": []string{secured, "None:None"}, "PkiDir": pkiDir, "AllowAnonymous": true,
		}
	}})
	procs.AddUser(t, r.Cfgs["a"], secUser, "Operator", secPassword)
	return r, certFile, keyFile, der, key
}

// TestMirroredSecuredUserSession: a Basic256Sha256 SignAndEncrypt session
// of a user survives SIGKILLs in mirrored mode (the survivor checks the
// client's signature over the first server's certificate and the mirrored
// nonce, and the password again); then, by hand: a wrong password on the
// survivor is refused, the right one takes the session over, and the same
// ActivateSession replayed (the nonce used once already) is refused.
func TestMirroredSecuredUserSession(t *testing.T) {
	r, certFile, keyFile, der, key := securePair(t)
	res := r.Trials(Drill{Mode: "mirrored", Trials: 1, Mirrored: true,
		Env:  []string{"OTOPCUA_PASSWORD=" + secPassword},
		Args: []string{"--security", secured, "--cert", certFile, "--key", keyFile, "--trust-server", "--user", secUser}})
	check(t, res, 1)
	if conn := res.Client.Events("connected"); len(conn) == 0 || !strings.Contains(conn[0].Raw, secured) {
		t.Fatalf("the client did not connect on %s: %v", secured, conn)
	}

	primary := r.WaitWhole(60 * time.Second)
	p, s := r.Nodes[primary], r.Nodes[other(primary)]
	ctx := context.Background()
	open := func(n *procs.Node) *uaclient.Channel {
		t.Helper()
		eps, err := uaclient.GetEndpoints(ctx, n.Endpoint(), uaclient.Options{DialTimeout: 10 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		var cert []byte
		for _, e := range eps {
			if e.SecurityPolicyURI == ua.SecurityPolicyURIBasic256Sha256 && e.SecurityMode == ua.MessageSecurityModeSignAndEncrypt {
				cert = e.ServerCertificate
			}
		}
		if cert == nil {
			t.Fatalf("%s offers no %s endpoint", n.Name, secured)
		}
		ch, err := uaclient.Dial(ctx, n.Endpoint(), uaclient.Options{DialTimeout: 10 * time.Second, Security: &uaclient.Security{
			PolicyURI: ua.SecurityPolicyURIBasic256Sha256, Mode: ua.MessageSecurityModeSignAndEncrypt,
			Certificate: der, PrivateKey: key, ServerCertificate: cert}})
		if err != nil {
			t.Fatalf("secured channel to %s: %v", n.Name, err)
		}
		t.Cleanup(func() { _ = ch.Close() })
		return ch
	}
	sess, err := uaclient.OpenSession(ctx, open(p), uaclient.SessionParams{Name: "replay-drill", Timeout: time.Minute,
		Application: &ua.ApplicationDescription{ApplicationURI: "urn:drill:otopcua:client", ProductURI: "urn:otopcua",
			ApplicationName: ua.NewLocalizedText("replay drill"), ApplicationType: ua.ApplicationTypeClient},
		CallTimeout: 30 * time.Second, User: &uaclient.UserName{Name: secUser, Password: secPassword}})
	if err != nil {
		t.Fatalf("session on %s: %v", p.Name, err)
	}
	WaitMirrorReady(t, s, 2) // the CLI's session and this one
	p.Signal(syscall.SIGKILL)
	p.WaitExit(30 * time.Second)

	refused := func(what string, err error, codes ...ua.StatusCode) {
		t.Helper()
		var ae *uaclient.ActivationError
		if !errors.As(err, &ae) {
			t.Fatalf("%s: %v, want a refused activation", what, err)
		}
		for _, c := range codes {
			if ae.Code == c {
				t.Logf("%s: refused with %v", what, ae.Code)
				return
			}
		}
		t.Fatalf("%s: refused with %v, want one of %v", what, ae.Code, codes)
	}
	_, err = sess.As(&uaclient.UserName{Name: secUser, Password: "wrong"}).Reactivate(ctx, open(s), nil, 30*time.Second)
	refused("a wrong password on the survivor", err, ua.StatusBadUserAccessDenied, ua.StatusBadIdentityTokenRejected)

	taken, err := sess.Reactivate(ctx, open(s), nil, 30*time.Second)
	if err != nil {
		t.Fatalf("the right password on the survivor: %v", err)
	}
	if _, err := taken.Call(ctx, &ua.ReadRequest{NodesToRead: []*ua.ReadValueID{{NodeID: ua.NewNumericNodeID(0, 2267), AttributeID: ua.AttributeIDValue, DataEncoding: &ua.QualifiedName{}}},
		TimestampsToReturn: ua.TimestampsToReturnNeither}, 10*time.Second); err != nil {
		t.Fatalf("a Read in the session taken over: %v", err)
	}

	// sess still holds the nonce the takeover used: the same
	// ActivateSession again is a replay.
	_, err = sess.Reactivate(ctx, open(s), nil, 30*time.Second)
	refused("the takeover replayed", err, ua.StatusBadApplicationSignatureInvalid, ua.StatusBadIdentityTokenInvalid,
		ua.StatusBadUserAccessDenied, ua.StatusBadIdentityTokenRejected, ua.StatusBadSessionIDInvalid)

	p.Restart()
	p.WaitReady(60 * time.Second)
}

// TestMirrorCatchUp: a member started after a session was created gets the
// current mirror before it counts as a hot standby (otopcua_mirror_ready
// 1, the session held), and the client then survives the death of the
// first member without falling back; a client whose server died while no
// member held its mirror falls back to Warm, and the survivor says why in
// its log.
func TestMirrorCatchUp(t *testing.T) {
	r := StartRig(t, RigOptions{RedundancySupport: "HotAndMirrored"})
	primary := r.WaitWhole(60 * time.Second)
	p, s := r.Nodes[primary], r.Nodes[other(primary)]

	// s down: the client's session is created while no peer mirrors it.
	s.Signal(syscall.SIGKILL)
	s.WaitExit(30 * time.Second)
	res := r.startMirrored(t)
	res.WaitFor(10*time.Second, 0, "a value from "+p.Name, isValueFrom(URI(p.Name)))
	s.Restart()
	s.WaitReady(60 * time.Second)
	WaitMirrorReady(t, s, 1) // the snapshot brought the session created before s existed
	mark := res.Next()
	p.Signal(syscall.SIGKILL)
	ev := res.WaitFor(30*time.Second, mark, "the failover to "+s.Name, isFailover(URI(s.Name)))
	if ev.Fallback != "" {
		t.Fatalf("after the catch-up the failover fell back to Warm: %s", ev.Raw)
	}
	res.WaitFor(10*time.Second, ev.Seq, "a value from "+s.Name, isValueFrom(URI(s.Name)))
	p.WaitExit(30 * time.Second)

	// Now s serves the session and p is down: nobody holds its mirror.
	// Killing s and starting p leaves the client nothing to take over.
	s.Signal(syscall.SIGKILL)
	s.WaitExit(30 * time.Second)
	p.Restart()
	p.WaitReady(60 * time.Second)
	ev = res.WaitFor(60*time.Second, ev.Seq, "the failover to "+p.Name, isFailover(URI(p.Name)))
	if ev.Fallback == "" {
		t.Fatalf("a failover with no mirror held did not fall back to Warm: %s", ev.Raw)
	}
	res.WaitFor(30*time.Second, ev.Seq, "a value from "+p.Name+" after the fallback", isValueFrom(URI(p.Name)))
	procs.CheckFor(t, 10*time.Second, 100*time.Millisecond, func() error {
		if !strings.Contains(p.Log(), "no member mirrored here") {
			return fmt.Errorf("%s's log does not say why the session fell back", p.Name)
		}
		return nil
	})
	t.Logf("fallback: %s", ev.Fallback)
}

// startMirrored starts `otopcua client subscribe --mode mirrored` on both
// node URLs, subscribed to the counter, and waits for its connected line.
func (r *Rig) startMirrored(t *testing.T) *clientproc.Proc {
	t.Helper()
	urls := r.Nodes["a"].Endpoint() + "," + r.Nodes["b"].Endpoint()
	c := clientproc.Start(t, "subscribe", r.Node, "-F", urls, "--json", "--mode", "mirrored",
		"--interval", "100ms", "--sampling-interval", "0", "--no-discovery")
	c.WaitFor(30*time.Second, 0, "connected event", func(l clientproc.Line) bool { return l.Type == clientproc.Connected })
	return c
}

func isFailover(to string) func(clientproc.Line) bool {
	return func(l clientproc.Line) bool { return l.Type == clientproc.Failover && l.To.URI == to }
}
