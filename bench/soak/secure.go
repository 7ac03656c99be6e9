package main

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/gopcua/opcua/id"
	"github.com/gopcua/opcua/ua"
	"github.com/gopcua/opcua/uapolicy"
	"github.com/gopcua/opcua/uasc"

	"github.com/otopcua/otopcua/internal/testcert"
	"github.com/otopcua/otopcua/opcua/chunksec"
	"github.com/otopcua/otopcua/opcua/uaclient"
)

// The secured endpoint the handshake abusers use.
const (
	securedPolicy = ua.SecurityPolicyURIBasic256Sha256
	securedMode   = ua.MessageSecurityModeSignAndEncrypt
	abuserAppURI  = "urn:otopcua:bench:soak:abuser"
)

// SecureClient is a client application instance certificate the host
// trusts (written to its PKI's trusted/certs before it starts) and the
// host's own certificate, for sealing OpenSecureChannel requests by hand.
type SecureClient struct {
	Cert      []byte // the client's, DER
	Key       *rsa.PrivateKey
	ServerPub *rsa.PublicKey // the host's
	Thumb     []byte         // SHA-1 of the host's leaf
}

// trustedClient makes a client certificate and writes it into the
// trusted/certs of the PKI directory pkiDir.
func trustedClient(t testing.TB, pkiDir string) *SecureClient {
	t.Helper()
	der, key := testcert.RSA(t, abuserAppURI, 2048)
	dir := filepath.Join(pkiDir, "trusted", "certs")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "soak-abuser.der"), der, 0o644); err != nil {
		t.Fatal(err)
	}
	return &SecureClient{Cert: der, Key: key}
}

// learnServer reads the host's certificate from its secured endpoint's
// description (GetEndpoints).
func (s *SecureClient) learnServer(ctx context.Context, endpoint string) error {
	eps, err := uaclient.GetEndpoints(ctx, endpoint, uaclient.Options{})
	if err != nil {
		return err
	}
	for _, e := range eps {
		if e.SecurityPolicyURI != securedPolicy || e.SecurityMode != securedMode {
			continue
		}
		leaf, err := uapolicy.ParseCertificate(e.ServerCertificate)
		if err != nil {
			return err
		}
		pub, ok := leaf.PublicKey.(*rsa.PublicKey)
		if !ok {
			return fmt.Errorf("the host's certificate has a %T key", leaf.PublicKey)
		}
		s.ServerPub, s.Thumb = pub, uapolicy.Thumbprint(leaf.Raw)
		return nil
	}
	return errors.New("the host offers no Basic256Sha256 SignAndEncrypt endpoint")
}

// sealedOpen is one OpenSecureChannel chunk (Issue when scID is 0, else
// Renew of channel scID) with sequence number seq and a fresh client
// nonce, signed with the client's key and encrypted for the host. Every
// call encrypts anew (OAEP is random): the same bytes twice are a replay.
func (s *SecureClient) sealedOpen(scID, seq uint32) ([]byte, error) {
	typ := ua.SecurityTokenRequestTypeIssue
	if scID != 0 {
		typ = ua.SecurityTokenRequestTypeRenew
	}
	nonce := make([]byte, 32)
	_, _ = rand.Read(nonce)
	hdr := uasc.NewAsymmetricSecurityHeader(securedPolicy, s.Cert, s.Thumb)
	m := &uasc.Message{
		MessageHeader: &uasc.MessageHeader{
			Header:                   uasc.NewHeader(uasc.MessageTypeOpenSecureChannel, uasc.ChunkTypeFinal, scID),
			AsymmetricSecurityHeader: hdr,
			SequenceHeader:           uasc.NewSequenceHeader(seq, seq),
		},
		TypeID: ua.NewFourByteExpandedNodeID(0, id.OpenSecureChannelRequest_Encoding_DefaultBinary),
		Service: &ua.OpenSecureChannelRequest{
			RequestHeader: requestHeader(nil, seq, opTimeout), RequestType: typ,
			SecurityMode: securedMode, ClientNonce: nonce, RequestedLifetime: uint32(time.Minute / time.Millisecond),
		},
	}
	b, err := m.Encode()
	if err != nil {
		return nil, err
	}
	alg, err := uapolicy.Asymmetric(securedPolicy, s.Key, s.ServerPub)
	if err != nil {
		return nil, err
	}
	return chunksec.Seal(b, 12+hdr.Len(), alg, true, false)
}

// sendOpen writes the OpenSecureChannel chunk opn on rc (Hello done) and
// reads the answer's frame: "OPNF" with the channel id, or the ERR as the
// error (a *uacp.Error, named by outcome).
func (rc *rawConn) sendOpen(opn []byte, timeout time.Duration) (uint32, error) {
	if err := rc.write(opn, timeout); err != nil {
		return 0, err
	}
	typ, body, err := rc.readFrame(timeout)
	switch {
	case err != nil:
		return 0, err
	case typ != "OPNF" || len(body) < 4:
		return 0, fmt.Errorf("OpenSecureChannel answered with %s", typ)
	}
	return uint32(body[0]) | uint32(body[1])<<8 | uint32(body[2])<<16 | uint32(body[3])<<24, nil
}
