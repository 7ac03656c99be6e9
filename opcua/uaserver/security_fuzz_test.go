package uaserver

import (
	"bytes"
	"crypto/rand"
	"crypto/rsa"
	"encoding/binary"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/gopcua/opcua/id"
	"github.com/gopcua/opcua/ua"
	"github.com/gopcua/opcua/uacp"
	"github.com/gopcua/opcua/uapolicy"
	"github.com/gopcua/opcua/uasc"

	"github.com/otopcua/otopcua/opcua/chunksec"
)

// deadConn is a peer that takes every write and has nothing to read.
type deadConn struct{ captureConn }

func (c *deadConn) Read([]byte) (int, error)        { return 0, io.EOF }
func (c *deadConn) SetReadDeadline(time.Time) error { return nil }

// clientOpen is an OpenSecureChannel chunk as a client sends it: policy,
// cliCert as sender, secured for srvCert, sequence number seq.
func clientOpen(t testing.TB, policy string, mode ua.MessageSecurityMode, seq uint32, nonceLen int) []byte {
	t.Helper()
	nonce := make([]byte, nonceLen)
	_, _ = rand.Read(nonce)
	return sealedOpen(t, openSpec{policy: policy, mode: mode, typ: ua.SecurityTokenRequestTypeIssue, seq: seq, nonce: nonce})
}

// openSpec is an OpenSecureChannel request a test sends.
type openSpec struct {
	policy string
	mode   ua.MessageSecurityMode
	typ    ua.SecurityTokenRequestType
	scID   uint32 // 0 for Issue
	seq    uint32
	nonce  []byte
}

// sealedOpen encodes o as one OPN chunk from cliCert, signed with cliKey
// and encrypted for srvCert (every call encrypts anew: OAEP is random).
func sealedOpen(t testing.TB, o openSpec) []byte {
	t.Helper()
	hdr := uasc.NewAsymmetricSecurityHeader(o.policy, cliCert, uapolicy.Thumbprint(srvCert))
	m := &uasc.Message{
		MessageHeader: &uasc.MessageHeader{
			Header:                   uasc.NewHeader("OPN", 'F', o.scID),
			AsymmetricSecurityHeader: hdr,
			SequenceHeader:           uasc.NewSequenceHeader(o.seq, o.seq),
		},
		TypeID: ua.NewFourByteExpandedNodeID(0, id.OpenSecureChannelRequest_Encoding_DefaultBinary),
		Service: &ua.OpenSecureChannelRequest{
			RequestHeader: newRequestHeader(), RequestType: o.typ,
			SecurityMode: o.mode, ClientNonce: o.nonce, RequestedLifetime: 60000,
		},
	}
	b, err := m.Encode()
	if err != nil {
		t.Fatal(err)
	}
	a, err := uapolicy.Asymmetric(o.policy, cliKey, srvCert509PublicKey(t))
	if err != nil {
		t.Fatal(err)
	}
	b, err = chunksec.Seal(b, 12+hdr.Len(), a, true, false)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func srvCert509PublicKey(t testing.TB) *rsa.PublicKey {
	_, pub, err := clientKey(srvCert)
	if err != nil {
		t.Fatal(err)
	}
	return pub
}

// fuzzChannel is a fresh, not yet opened channel of a server offering
// every secured endpoint.
func fuzzChannel(t testing.TB, srv *Server) *channel {
	ack := &uacp.Acknowledge{ReceiveBufSize: 65535, SendBufSize: 65535}
	ch := newChannel(srv, &deadConn{}, "127.0.0.1", ack, &uacp.Hello{ReceiveBufSize: 65535, SendBufSize: 65535})
	ch.id = 7
	return ch
}

// checkOpened fails unless a channel that accepted a chunk is open in a
// consistent state: a current token with keys exactly when secured, and a
// secured channel only with the one trusted client certificate.
func checkOpened(t *testing.T, ch *channel) {
	t.Helper()
	switch {
	case !ch.opened || ch.cur == nil:
		t.Fatal("chunk accepted but the channel is not open")
	case ch.sec.secured() != (ch.cur.sym != nil):
		t.Fatalf("secured %v with keys %v", ch.sec.secured(), ch.cur.sym != nil)
	case ch.sec.secured() && !sameCertificate(ch.sec.remoteCert, cliCert):
		t.Fatal("secured with an untrusted certificate")
	case !ch.sec.secured() && ch.sec.policy != ua.SecurityPolicyURINone:
		t.Fatalf("policy %s without security", ch.sec.policy)
	}
}

// FuzzOpenSecureChannel feeds arbitrary OPN chunks to a channel of a server
// with a real key: the channel never panics, and either refuses the chunk
// (which closes it) or is open in a consistent state.
func FuzzOpenSecureChannel(f *testing.F) {
	testKeys(f)
	var cfg Config
	secure(securedEndpointSet...)(&cfg)
	cfg.ListenAddr, cfg.Logger = "127.0.0.1:0", discardLogger()
	// Every input comes from one address: without this all but the first
	// twenty would be refused before the crypto the fuzzer explores.
	cfg.MaxSecureChannelOpensPerAddress = 1 << 30
	srv, err := New(cfg, newFakeStore(), nil)
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { _ = srv.Close() })

	valid := clientOpen(f, ua.SecurityPolicyURIBasic256Sha256, ua.MessageSecurityModeSignAndEncrypt, 1, 32)
	{ // The seed must really open a channel, or the fuzzer explores nothing.
		ch := fuzzChannel(f, srv)
		if err := ch.handleChunk(valid); err != nil {
			f.Fatalf("valid OpenSecureChannel refused: %v", err)
		}
		if !ch.opened || !ch.sec.encrypted() {
			f.Fatal("valid OpenSecureChannel did not open an encrypted channel")
		}
	}
	f.Add(valid)
	f.Add(clientOpen(f, ua.SecurityPolicyURIAes256Sha256RsaPss, ua.MessageSecurityModeSign, 1, 32))
	f.Add(clientOpen(f, ua.SecurityPolicyURIAes128Sha256RsaOaep, ua.MessageSecurityModeSign, 1, 31))
	f.Add(valid[:len(valid)-1])
	f.Add(valid[:200])
	tampered := bytes.Clone(valid)
	tampered[len(tampered)-3] ^= 1
	f.Add(tampered)
	f.Fuzz(func(t *testing.T, b []byte) {
		if len(b) < 8 || len(b) > 65535 {
			return
		}
		b = bytes.Clone(b)
		copy(b, "OPNF")
		binary.LittleEndian.PutUint32(b[4:], uint32(len(b)))
		ch := fuzzChannel(t, srv)
		defer ch.cancel()
		err := ch.handleChunk(b)
		if err != nil && strings.HasPrefix(err.Error(), "panic") {
			t.Fatal(err)
		}
		if err == nil {
			checkOpened(t, ch)
		}
	})
}

// TestSessionSignatures: CreateSession on a secured channel carries our
// signature over the client's certificate and nonce; ActivateSession is
// refused with a wrong client signature and accepted with the right one.
func TestSessionSignatures(t *testing.T) {
	srv := startSecureServer(t, secure(securedEndpointSet[1]))
	rc := dialRawSecure(t, "opc.tcp://"+srv.Addr().String(), securedEndpointSet[1])
	nonce := make([]byte, 32)
	_, _ = rand.Read(nonce)
	res := rc.mustDo(&ua.CreateSessionRequest{
		ClientDescription: &ua.ApplicationDescription{
			ApplicationURI: clientURI, ApplicationName: ua.NewLocalizedText("c"), ApplicationType: ua.ApplicationTypeClient,
		},
		SessionName: t.Name(), ClientNonce: nonce, ClientCertificate: cliCert, RequestedSessionTimeout: 60000,
	}).(*ua.CreateSessionResponse)
	if !bytes.Equal(res.ServerCertificate, srvCert) {
		t.Fatal("CreateSession without the server certificate")
	}
	if err := rc.sc.VerifySessionSignature(res.ServerCertificate, nonce, res.ServerSignature.Signature); err != nil {
		t.Fatalf("server signature: %v", err)
	}
	if err := rc.sc.VerifySessionSignature(res.ServerCertificate, make([]byte, 32), res.ServerSignature.Signature); err == nil {
		t.Fatal("the server signature does not cover the nonce")
	}
	rc.token = res.AuthenticationToken
	wrong, alg, err := rc.sc.NewSessionSignature(srvCert, make([]byte, 32))
	if err != nil {
		t.Fatal(err)
	}
	req := activateRequest(&ua.AnonymousIdentityToken{PolicyID: anonymousPolicyID})
	req.ClientSignature = &ua.SignatureData{Algorithm: alg, Signature: wrong}
	rc.wantStatus(req, ua.StatusBadApplicationSignatureInvalid)
	right, alg, err := rc.sc.NewSessionSignature(srvCert, res.ServerNonce)
	if err != nil {
		t.Fatal(err)
	}
	req = activateRequest(&ua.AnonymousIdentityToken{PolicyID: anonymousPolicyID})
	req.ClientSignature = &ua.SignatureData{Algorithm: alg, Signature: right}
	rc.mustDo(req)
}

// dialRawSecure is dialRaw on a secured channel as cliCert.
func dialRawSecure(t *testing.T, url string, e EndpointSecurity) *rawClient {
	t.Helper()
	rc, err := dialRawSecureTo(t, url, e, srvCert)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	return rc
}

// dialRawSecureTo is dialRawSecure to a server presenting the certificate
// server; an OpenSecureChannel refused is returned.
func dialRawSecureTo(t *testing.T, url string, e EndpointSecurity, server []byte) (*rawClient, error) {
	t.Helper()
	ctx := testCtx(t)
	conn, err := (&uacp.Dialer{}).Dial(ctx, url)
	if err != nil {
		t.Fatalf("uacp.Dial: %v", err)
	}
	cfg := &uasc.Config{
		SecurityPolicyURI: e.PolicyURI, SecurityMode: e.Mode,
		Certificate: cliCert, LocalKey: cliKey,
		RemoteCertificate: server, Thumbprint: uapolicy.Thumbprint(server),
		Lifetime: uint32(time.Hour / time.Millisecond), RequestTimeout: 5 * time.Second,
	}
	sc, err := uasc.NewSecureChannel(url, conn, cfg, make(chan error, 1))
	if err != nil {
		t.Fatalf("NewSecureChannel: %v", err)
	}
	if err := sc.Open(ctx); err != nil {
		_ = conn.Close()
		return nil, err
	}
	rc := &rawClient{t: t, conn: conn, sc: sc}
	t.Cleanup(rc.close)
	return rc, nil
}
