package floating

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/otopcua/otopcua/internal/testcert"
	"github.com/otopcua/otopcua/tests/netem"
	"github.com/otopcua/otopcua/tests/procs"
	"github.com/otopcua/otopcua/tests/uatrust"
)

const (
	clusterSecret = "floating-drill-cluster-secret"
	scadaURI      = "urn:otopcua:test:scada"
)

// TestFloatingSecuredClientTrustsOnce: the pair's shared identity is
// provisioned once (otopcua pki floating into the Config DB); a SCADA client
// in the client host that trusts only that certificate reads through
// opc.tcp://FLOATING:4840 with Basic256Sha256 SignAndEncrypt, and after a
// SIGKILL of the Primary reads through the same URL from the survivor
// without a new trust decision; the survivor's own endpoint presents its
// own certificate, which the client refuses.
func TestFloatingSecuredClientTrustsOnce(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	for _, name := range []string{"a", "b"} {
		cfg := r.config(name)
		cfg["Cluster"].(map[string]any)["Secret"] = clusterSecret
		cfg["OpcUa"].(map[string]any)["Security"] = map[string]any{
			"Policies": []string{"None:None", "Basic256Sha256:SignAndEncrypt"},
			// The client's certificate is accepted on first contact: what
			// this drill is about is the server's certificate.
			"AutoAcceptUntrusted": true,
			"PkiDir":              filepath.Join(t.TempDir(), "pki"),
		}
		r.cfgs[name] = cfg
	}
	certFile := filepath.Join(t.TempDir(), "floating.der")
	procs.ProvisionFloating(t, r.cfgs["a"], "--out", certFile)
	trusted, err := os.ReadFile(certFile)
	if err != nil {
		t.Fatal(err)
	}
	cert, key := testcert.RSA(t, scadaURI, 2048)
	scada := &uatrust.Client{Trusted: [][]byte{trusted}, Cert: cert, Key: key, URI: scadaURI}

	r.healthy()
	// The client's connections leave from the client host to the floating
	// address (and to b's own address), through forwarders the test
	// process dials.
	viaFloating := "opc.tcp://" + netem.Forward(t, r.client, fmt.Sprintf("%s:%d", r.ip, opcPort))
	bOwn := "opc.tcp://" + netem.Forward(t, r.client, fmt.Sprintf("%s:%d", r.net.Host("b").Addr, opcPort))
	if err := scada.Read(viaFloating); err != nil {
		t.Fatalf("through the floating address, a holding it: %v", err)
	}
	r.waitOwner("a", 30*time.Second)
	r.ready("a", "b")

	killed := time.Now()
	r.nodes["a"].Signal(syscall.SIGKILL)
	r.sampler.waitMAC(t, r.macs["b"], killed, 30*time.Second)
	procs.CheckFor(t, 30*time.Second, 200*time.Millisecond, func() error {
		if err := scada.Read(viaFloating); err != nil {
			return fmt.Errorf("through the floating address after the SIGKILL of a, b holding it: %w", err)
		}
		return nil
	})
	t.Logf("SIGKILL of a → the secured client read through the floating address again after %v, with the certificate it already trusted",
		time.Since(killed).Round(time.Millisecond))
	if err := scada.Read(bOwn); !errors.Is(err, uatrust.ErrUntrusted) {
		t.Fatalf("b's own endpoint: %v, want the client's refusal of b's own certificate", err)
	}
}
