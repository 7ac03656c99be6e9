package failover

import (
	"crypto/x509"
	"encoding/pem"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/otopcua/otopcua/internal/testcert"
	"github.com/otopcua/otopcua/tests/clientproc"
	"github.com/otopcua/otopcua/tests/procs"
)

// secureClientURI is the ApplicationUri of the drill's client certificate.
const secureClientURI = "urn:drill:otopcua:client"

// secureDrillPolicy is the policy and mode the CLI asks for.
const secureDrillPolicy = "Basic256Sha256:SignAndEncrypt"

// clientIdentity writes a client certificate (DER) and key (PEM) into dir.
func clientIdentity(t *testing.T, dir string) (certFile, keyFile string, der []byte) {
	t.Helper()
	der, key := testcert.RSA(t, secureClientURI, 2048)
	certFile, keyFile = filepath.Join(dir, "client.der"), filepath.Join(dir, "client-key.pem")
	if err := os.WriteFile(certFile, der, 0o600); err != nil {
		t.Fatal(err)
	}
	pemKey := pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(key)})
	if err := os.WriteFile(keyFile, pemKey, 0o600); err != nil {
		t.Fatal(err)
	}
	return certFile, keyFile, der
}

// secureRig configures every node for the secured endpoints, each with
// its own PKI directory (so its own certificate) in which the client's
// certificate is trusted before start. None:None stays offered for the
// rig's own watchers (demo.Watcher speaks None only); the drill checks
// that the CLI used the secured endpoint.
func secureRig(t *testing.T, r *rig, clientDER []byte, names ...string) {
	t.Helper()
	for _, n := range names {
		pkiDir := filepath.Join(t.TempDir(), "pki-"+n)
		trusted := filepath.Join(pkiDir, "trusted", "certs")
		if err := os.MkdirAll(trusted, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(trusted, "drill-client.der"), clientDER, 0o644); err != nil {
			t.Fatal(err)
		}
		r.configure(n, func(cfg map[string]any) {
			cfg["OpcUa"].(map[string]any)["Security"] = map[string]any{
				"Policies":       []string{secureDrillPolicy, "Aes256_Sha256_RsaPss:SignAndEncrypt", "None:None"},
				"PkiDir":         pkiDir,
				"AllowAnonymous": true,
			}
		})
	}
}

// Client drill C5: the C1 drill over Basic256Sha256 SignAndEncrypt. The
// CLI takes each node's certificate from its GetEndpoints answer
// (--trust-server, each thumbprint printed once), connects to the Primary
// on the secured endpoint, and after SIGKILL of the Primary fails over
// once to the survivor, whose notifications resume on its own secured
// channel.
func TestClientDrill05KillPrimarySecured(t *testing.T) {
	t.Parallel()
	r := newRig(t, pairSpecs("site", "a", "b")...)
	certFile, keyFile, der := clientIdentity(t, t.TempDir())
	secureRig(t, r, der, "a", "b")
	want := healthyRig(t, r)
	p, s := pairRoles(t, want)
	args := append(subscribeArgs(r.node("a").Endpoint(), r.node("b").Endpoint()),
		"--security", secureDrillPolicy, "--cert", certFile, "--key", keyFile, "--trust-server")
	c := clientproc.Start(t, args...)
	conn := connectedTo(t, c, p, Primary)
	if conn.Security != secureDrillPolicy {
		t.Fatalf("connected event says security %q, want %q: %s", conn.Security, secureDrillPolicy, conn.Raw)
	}
	procs.Holds(t, 3*time.Second, 50*time.Millisecond, func() error {
		c.MustLive()
		if err := onlyEvents(c, clientproc.Connected); err != nil {
			return err
		}
		return r.levelsAre(want)
	})

	from := c.Next()
	killed := time.Now()
	r.node(p).Signal(syscall.SIGKILL)
	fo := c.WaitFor(30*time.Second, from, "failover event", isEvent(clientproc.Failover, ""))
	t.Logf("SIGKILL of the Primary %s → secured failover event after %v: %s", p, fo.Read.Sub(killed).Round(time.Millisecond), fo)
	if fo.From.URI != uriOf(p) || fo.To.URI != uriOf(s) {
		t.Fatalf("failover from %s to %s, want %s → %s", fo.From.URI, fo.To.URI, uriOf(p), uriOf(s))
	}
	if fo.Security != secureDrillPolicy {
		t.Fatalf("failover event says security %q, want %q: %s", fo.Security, secureDrillPolicy, fo.Raw)
	}
	if !fo.HasMs || fo.FailoverMs <= 0 || fo.FailoverMs >= 5000 {
		t.Errorf("failoverMs %v (present %v), want 0 < failoverMs < 5000", fo.FailoverMs, fo.HasMs)
	}
	top := c.WaitFor(30*time.Second, from, "250 from the survivor", isNote(uriOf(s), levelIs(Primary)))
	t.Logf("Part 4 failover time %.1f ms; kill → 250 from %s after %v", fo.FailoverMs, s, top.Read.Sub(killed).Round(time.Millisecond))
	r.waitLevels(10*time.Second, map[string]byte{s: Primary})
	procs.Holds(t, 2*time.Second, 50*time.Millisecond, func() error {
		c.MustLive()
		return onlyEvents(c, clientproc.Connected, clientproc.Failover)
	})
	if o := notesFromOthers(c, fo, uriOf(s)); len(o) > 0 {
		t.Fatalf("after the failover to %s the client printed notifications from elsewhere: %v", s, o)
	}
	// --trust-server printed each node's thumbprint once, however often
	// the client reconnected.
	for _, n := range []string{"a", "b"} {
		if got := strings.Count(c.Stderr(), "trusting the certificate of "+r.node(n).Endpoint()+":"); got != 1 {
			t.Errorf("stderr names the certificate of %s %d times, want once:\n%s", n, got, c.Stderr())
		}
	}
	r.assertInvariant()
}
