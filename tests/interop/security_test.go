package interop_test

import (
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha1"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"math"
	"math/big"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gopcua/opcua/ua"

	"github.com/otopcua/otopcua/internal/fielddevice"
	"github.com/otopcua/otopcua/tests/procs"
)

// secureEvent is one line of secure.mjs.
type secureEvent struct {
	Event       string  `json:"event"`
	Stage       string  `json:"stage"`
	Status      string  `json:"status"`
	Message     string  `json:"message"`
	Certificate string  `json:"certificate"`
	ConnectMs   float64 `json:"connectMs"`
	SessionMs   float64 `json:"sessionMs"`
	Read        *struct {
		Status string  `json:"status"`
		Value  float64 `json:"value"`
	} `json:"read"`
	Changes []struct {
		Status string  `json:"status"`
		Value  float64 `json:"value"`
	} `json:"changes"`
	Write     string `json:"write"`
	Endpoints []struct {
		Policy string   `json:"policy"`
		Mode   string   `json:"mode"`
		Tokens []string `json:"tokens"`
	} `json:"endpoints"`
}

// secureClient is a running secure.mjs: one command a line in, one event
// a line out.
type secureClient struct {
	t *testing.T
	s *nodeScript
}

func (c *secureClient) do(cmd map[string]any) secureEvent {
	c.t.Helper()
	b, err := json.Marshal(cmd)
	if err != nil {
		c.t.Fatal(err)
	}
	if _, err := c.s.Stdin.Write(append(b, '\n')); err != nil {
		c.t.Fatalf("secure.mjs stdin: %v", err)
	}
	var e secureEvent
	c.s.next(fmt.Sprint(cmd["op"]), &e)
	return e
}

const secureCluster = "site-a"

// secureDeviceDoc is a deployment with one Modbus TCP device at addr: a
// writable Int16 Setpoint (holding 0) and a Float32 Speed (holding 10..11).
func secureDeviceDoc(addr string) string {
	return fmt.Sprintf(`{"clusterId": %q, "devices": [
  {"name": "press1", "driver": "modbus-tcp", "address": %q, "unitId": 1, "pollInterval": "00:00:00.100", "timeout": "500ms",
   "tags": [
     {"name": "Setpoint", "table": "holding", "address": 0, "type": "int16", "writable": true},
     {"name": "Speed", "table": "holding", "address": 10, "type": "float32", "wordOrder": "big"}
   ]}]}`, secureCluster, addr)
}

// userCertificate writes a self-signed RSA 2048 user certificate for the
// admin user cn: its DER into the node's user trust list
// (PkiDir/users/trusted/certs) and into dir, its key as PEM into dir. It
// returns the two files node-opcua reads.
func userCertificate(t *testing.T, pkiDir, dir, cn string) (certFile, keyFile string) {
	t.Helper()
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(time.Now().UnixNano()),
		Subject:      pkix.Name{CommonName: cn, Organization: []string{"otopcua interop"}},
		NotBefore:    time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment | x509.KeyUsageDataEncipherment | x509.KeyUsageContentCommitment,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
		BasicConstraintsValid: true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	trusted := filepath.Join(pkiDir, "users", "trusted", "certs")
	if err := os.MkdirAll(trusted, 0o755); err != nil {
		t.Fatal(err)
	}
	certFile, keyFile = filepath.Join(dir, cn+".der"), filepath.Join(dir, cn+".key.pem")
	keyPEM := pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(key)})
	for file, b := range map[string][]byte{filepath.Join(trusted, cn+".der"): der, certFile: der, keyFile: keyPEM} {
		if err := os.WriteFile(file, b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return certFile, keyFile
}

// pemThumbprint is the SHA-1 thumbprint (upper-case hex) of the first
// certificate in a PEM file.
func pemThumbprint(t *testing.T, file string) string {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	blk, _ := pem.Decode(b)
	if blk == nil {
		t.Fatalf("%s holds no PEM block", file)
	}
	sum := sha1.Sum(blk.Bytes)
	return strings.ToUpper(hex.EncodeToString(sum[:]))
}

// wireTap is a loopback TCP proxy to a node's OPC UA port that keeps
// every byte the node sent back, so a test can read the ERR message a
// client library does not report.
type wireTap struct {
	ln net.Listener
	mu sync.Mutex
	in []byte // from the node; mu must be held.
}

func newWireTap(t *testing.T, target string) *wireTap {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	w := &wireTap{ln: ln}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go w.relay(c, target)
		}
	}()
	return w
}

func (w *wireTap) relay(c net.Conn, target string) {
	defer c.Close()
	s, err := net.Dial("tcp", target)
	if err != nil {
		return
	}
	defer s.Close()
	go func() { _, _ = io.Copy(s, c); _ = s.(*net.TCPConn).CloseWrite() }()
	buf := make([]byte, 64<<10)
	for {
		n, err := s.Read(buf)
		w.mu.Lock()
		w.in = append(w.in, buf[:n]...)
		w.mu.Unlock()
		if _, werr := c.Write(buf[:n]); err != nil || werr != nil {
			return
		}
	}
}

// errCodes are the status codes of the ERR messages the node sent.
func (w *wireTap) errCodes() []uint32 {
	w.mu.Lock()
	defer w.mu.Unlock()
	var out []uint32
	for b := w.in; len(b) >= 12; {
		size := int(binary.LittleEndian.Uint32(b[4:8]))
		if size < 8 || size > len(b) {
			break
		}
		if string(b[:4]) == "ERRF" {
			out = append(out, binary.LittleEndian.Uint32(b[8:12]))
		}
		b = b[size:]
	}
	return out
}

// TestNodeOPCUASecuredSessionsOnAModbusDevice drives a real `otopcua
// host` serving a real Modbus TCP device with node-opcua over signed and
// encrypted channels only (no None endpoint, no anonymous sessions, the
// default rights): its unknown application certificate is refused and
// parked in rejected/ until `otopcua pki trust` runs; then an Operator
// (UserName) and an X509 user read, subscribe and write over
// Basic256Sha256 and Aes256_Sha256_RsaPss SignAndEncrypt, each write
// landing on the device; a wrong password and a Viewer's write are
// refused, the latter never reaching the device; a None session is
// refused while GetEndpoints on None still answers.
func TestNodeOPCUASecuredSessionsOnAModbusDevice(t *testing.T) {
	start := time.Now()
	dev, err := fielddevice.Start(fmt.Sprintf("127.0.0.1:%d", procs.UniquePort(t)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(dev.Close)

	dir := t.TempDir()
	pkiDir := filepath.Join(dir, "pki")
	cfg := procs.BaseConfig("a", procs.NewPorts(t))
	cfg["Node"].(map[string]any)["ClusterId"] = secureCluster
	cfg["ConfigDb"] = map[string]any{"Provider": "sqlite", "ConnectionString": "file:" + filepath.Join(dir, "config.db")}
	cfg["Deployment"] = map[string]any{"PollInterval": "200ms"}
	cfg["Telemetry"].(map[string]any)["LogLevel"] = "info"
	opc := cfg["OpcUa"].(map[string]any)
	opc["Security"] = map[string]any{
		"Policies":       []string{"Basic256Sha256:SignAndEncrypt", "Aes256_Sha256_RsaPss:SignAndEncrypt"},
		"PkiDir":         pkiDir,
		"AllowAnonymous": false,
	}
	// The node's defaults: Operator writes, Viewer and Anonymous read
	// (procs.BaseConfig lets anonymous sessions write).
	opc["Authorization"] = map[string]any{"Anonymous": []string{"read"}}
	cfgFile := filepath.Join(dir, "appsettings.json")
	if b, err := json.Marshal(cfg); err != nil {
		t.Fatal(err)
	} else if err := os.WriteFile(cfgFile, b, 0o644); err != nil {
		t.Fatal(err)
	}

	const opPassword, viewerPassword = "operator-pass-15", "viewer-pass-15"
	// `otopcua user add` (no API tokens needed: procs.AddUser would make them).
	procs.User(t, cfg, opPassword+"\n", "add", "op", "--role", "Operator")
	procs.User(t, cfg, viewerPassword+"\n", "add", "viewer", "--role", "Viewer")
	procs.User(t, cfg, "badge-pass-15\n", "add", "badge", "--role", "Operator")
	badgeCert, badgeKey := userCertificate(t, pkiDir, dir, "badge")
	procs.Deploy(t, cfg, secureDeviceDoc(dev.Addr()))

	n := procs.Start(t, "a", cfg)
	n.WaitReady(30 * time.Second)
	setpoint := "nsu=urn:otopcua:cluster:" + secureCluster + ";s=press1/Setpoint"
	speed := "nsu=urn:otopcua:cluster:" + secureCluster + ";s=press1/Speed"
	procs.CheckFor(t, 30*time.Second, 100*time.Millisecond, func() error {
		body, err := n.Get("/api/deployment")
		if err != nil {
			return err
		}
		var rep struct {
			Version int64 `json:"version"`
			Devices []struct {
				State string `json:"state"`
			} `json:"devices"`
		}
		if err := json.Unmarshal([]byte(body), &rep); err != nil {
			return fmt.Errorf("%v: %s", err, body)
		}
		if rep.Version != 1 || len(rep.Devices) != 1 || rep.Devices[0].State != "connected" {
			return fmt.Errorf("deployment 1 not applied or the device not connected: %s", body)
		}
		return nil
	})
	// The device keeps changing the Speed node-opcua subscribes to.
	stopSpeed := make(chan struct{})
	defer close(stopSpeed)
	go func() {
		for v := float32(1); ; v++ {
			select {
			case <-stopSpeed:
				return
			case <-time.After(100 * time.Millisecond):
				bits := math.Float32bits(v)
				dev.SetHolding(10, uint16(bits>>16), uint16(bits))
			}
		}
	}()

	serverCert := filepath.Join(pkiDir, "own", "certs", "otopcua.der")
	c := &secureClient{t: t, s: startNodeScript(t, "secure.mjs", filepath.Join(dir, "client-pki"), serverCert)}
	var ready secureEvent
	c.s.next("ready", &ready)
	if ready.Event != "ready" {
		t.Fatalf("first event %+v", ready)
	}
	clientThumb := pemThumbprint(t, ready.Certificate)
	opUser := map[string]any{"type": "username", "name": "op", "password": opPassword}
	badgeUser := map[string]any{"type": "x509", "certificate": badgeCert, "key": badgeKey}
	session := func(policy string, user map[string]any, extra map[string]any) secureEvent {
		cmd := map[string]any{"op": "session", "url": n.Endpoint(), "policy": policy, "mode": "SignAndEncrypt", "user": user}
		if policy == "None" {
			cmd["mode"] = "None"
		}
		for k, v := range extra {
			cmd[k] = v
		}
		return c.do(cmd)
	}

	// 2. node-opcua's own certificate is unknown: refused, parked in rejected/.
	tap := newWireTap(t, fmt.Sprintf("127.0.0.1:%d", n.OpcPort))
	e := c.do(map[string]any{"op": "session", "url": "opc.tcp://" + tap.ln.Addr().String(), "policy": "Basic256Sha256",
		"mode": "SignAndEncrypt", "user": opUser, "read": setpoint})
	if e.Event != "refused" || e.Stage != "connect" {
		t.Fatalf("an untrusted client certificate: %+v, want refused at connect", e)
	}
	// node-opcua does not surface the ERR message's status: read it off the wire.
	if codes := tap.errCodes(); !slices.Equal(codes, []uint32{uint32(ua.StatusBadCertificateUntrusted)}) {
		t.Fatalf("the node answered node-opcua's OpenSecureChannel with ERR codes %x, want one BadCertificateUntrusted (%x)",
			codes, uint32(ua.StatusBadCertificateUntrusted))
	}
	t.Logf("node-opcua's refusal: %q; on the wire: ERR %s", e.Message, ua.StatusBadCertificateUntrusted)
	rejected := filepath.Join(pkiDir, "rejected", "certs", clientThumb+".der")
	if _, err := os.Stat(rejected); err != nil {
		t.Fatalf("node-opcua's certificate %s is not in rejected/: %v", clientThumb, err)
	}
	out, err := exec.Command(procs.Binary(t), "pki", "trust", clientThumb, "--config", cfgFile).CombinedOutput()
	if err != nil || !strings.Contains(string(out), "trusted "+clientThumb) {
		t.Fatalf("otopcua pki trust %s: %v\n%s", clientThumb, err, out)
	}
	if _, err := os.Stat(filepath.Join(pkiDir, "trusted", "certs", clientThumb+".der")); err != nil {
		t.Fatalf("after pki trust: %v", err)
	}
	trustedAt := time.Now()
	procs.CheckFor(t, 10*time.Second, 50*time.Millisecond, func() error {
		if e = session("Basic256Sha256", badgeUser, map[string]any{"read": setpoint}); e.Event != "session" {
			return fmt.Errorf("after pki trust, without a restart: %+v", e)
		}
		return nil
	})
	t.Logf("trusted by `otopcua pki trust`: the same client connected %v later (same node process, pid %d)",
		time.Since(trustedAt).Round(time.Millisecond), n.PID())

	// 1. Both policies, both user tokens: read, subscribe, write to the device.
	value := 100
	for _, policy := range []string{"Basic256Sha256", "Aes256_Sha256_RsaPss"} {
		for _, u := range []struct {
			name string
			user map[string]any
		}{{"UserName op (Operator)", opUser}, {"X509 badge (Operator)", badgeUser}} {
			value++
			e := session(policy, u.user, map[string]any{"read": speed, "subscribe": speed,
				"write": map[string]any{"nodeId": setpoint, "value": value}})
			if e.Event != "session" {
				t.Fatalf("%s SignAndEncrypt, %s: %+v", policy, u.name, e)
			}
			if e.Read == nil || e.Read.Status != "Good" {
				t.Fatalf("%s, %s: read of Speed %+v", policy, u.name, e.Read)
			}
			if len(e.Changes) < 2 || e.Changes[0].Status != "Good" || e.Changes[1].Status != "Good" ||
				e.Changes[0].Value == e.Changes[1].Value {
				t.Fatalf("%s, %s: want two Good notifications of a changing Speed, got %+v", policy, u.name, e.Changes)
			}
			if e.Write != "Good" {
				t.Fatalf("%s, %s: write of Setpoint = %s, want Good", policy, u.name, e.Write)
			}
			want := uint16(value)
			procs.CheckFor(t, 5*time.Second, 20*time.Millisecond, func() error {
				if got := dev.Holding(0); got != want {
					return fmt.Errorf("%s, %s: device holding 0 = %d, want %d", policy, u.name, got, want)
				}
				return nil
			})
			t.Logf("node-opcua %s SignAndEncrypt, %s: connect (HEL+OpenSecureChannel) %.1f ms, CreateSession+ActivateSession %.1f ms; Speed %v→%v; Setpoint %d on the device",
				policy, u.name, e.ConnectMs, e.SessionMs, e.Changes[0].Value, e.Changes[1].Value, value)
		}
	}

	// 3. A wrong password; a Viewer's write.
	e = session("Aes256_Sha256_RsaPss", map[string]any{"type": "username", "name": "op", "password": "not-" + opPassword}, nil)
	if e.Event != "refused" || e.Stage != "session" || e.Status != "BadUserAccessDenied" {
		t.Fatalf("a wrong password: %+v, want refused at session with BadUserAccessDenied", e)
	}
	writes, held := dev.Writes(), dev.Holding(0)
	e = session("Basic256Sha256", map[string]any{"type": "username", "name": "viewer", "password": viewerPassword},
		map[string]any{"read": setpoint, "write": map[string]any{"nodeId": setpoint, "value": 999}})
	if e.Event != "session" || e.Read == nil || e.Read.Status != "Good" || e.Read.Value != float64(held) {
		t.Fatalf("a Viewer reads Setpoint: %+v (read %+v), want Good %d", e, e.Read, held)
	}
	if e.Write != "BadUserAccessDenied" {
		t.Fatalf("a Viewer's write = %q, want BadUserAccessDenied", e.Write)
	}
	// Barrier: an Operator's write after it lands; had the Viewer's reached
	// the driver, it would have been counted before this one. (The X509
	// Operator: a UserName activation costs a bcrypt check, seconds with
	// -race.)
	e = session("Basic256Sha256", badgeUser, map[string]any{"write": map[string]any{"nodeId": setpoint, "value": 555}})
	if e.Write != "Good" {
		t.Fatalf("the Operator's barrier write: %+v", e)
	}
	procs.CheckFor(t, 5*time.Second, 20*time.Millisecond, func() error {
		if got := dev.Holding(0); got != 555 {
			return fmt.Errorf("device holding 0 = %d, want the Operator's 555", got)
		}
		return nil
	})
	if got := dev.Writes() - writes; got != 1 {
		t.Fatalf("the device received %d writes for the Viewer's and the Operator's, want 1 (the Operator's)", got)
	}

	// 4. No None endpoint: discovery answers on None, a session does not.
	e = c.do(map[string]any{"op": "endpoints", "url": n.Endpoint()})
	var offered []string
	for _, ep := range e.Endpoints {
		offered = append(offered, ep.Policy+":"+ep.Mode)
		if slices.Contains(ep.Tokens, "Anonymous") || !slices.Contains(ep.Tokens, "UserName") || !slices.Contains(ep.Tokens, "Certificate") {
			t.Fatalf("endpoint %s:%s offers user tokens %v, want UserName and Certificate, no Anonymous", ep.Policy, ep.Mode, ep.Tokens)
		}
	}
	slices.Sort(offered)
	if want := []string{"Aes256_Sha256_RsaPss:SignAndEncrypt", "Basic256Sha256:SignAndEncrypt"}; !slices.Equal(offered, want) {
		t.Fatalf("GetEndpoints on a None channel offers %v, want %v", offered, want)
	}
	e = session("None", opUser, map[string]any{"read": setpoint, "ignoreEndpoints": true})
	if e.Event != "refused" {
		t.Fatalf("a session on SecurityPolicy None was not refused: %+v", e)
	}
	t.Logf("a None session: refused at %s with %q (%s)", e.Stage, e.Status, e.Message)
	if e.Status != "BadSecurityPolicyRejected" {
		t.Fatalf("a session on SecurityPolicy None: %s, want BadSecurityPolicyRejected", e.Status)
	}

	c.s.Stdin.Close()
	var closed secureEvent
	c.s.next("closed", &closed)
	if err := c.s.Wait(); err != nil {
		t.Fatalf("secure.mjs: %v", err)
	}
	t.Logf("the whole run took %v", time.Since(start).Round(time.Millisecond))
}
