package uaclient

import (
	"bytes"
	"crypto/rsa"
	"crypto/x509"
	"encoding/binary"
	"errors"
	"fmt"
	"time"

	"github.com/gopcua/opcua/id"
	"github.com/gopcua/opcua/ua"
	"github.com/gopcua/opcua/uapolicy"
	"github.com/gopcua/opcua/uasc"

	"github.com/otopcua/otopcua/opcua/chunksec"
)

// The crypto of the client's secure channel (OPC UA Part 6 §6.7): the
// asymmetric OpenSecureChannel chunks, the symmetric MSG chunks, token
// renewal. The algorithms are gopcua's uapolicy and the chunk layout
// opcua/chunksec, shared with otopcua's server.

// DefaultTokenLifetime is the security token lifetime a Channel asks for
// unless Security.RequestedLifetime says otherwise.
const DefaultTokenLifetime = time.Hour

// RenewFraction is the share of a token's revised lifetime after which the
// Channel renews it (Part 4 §5.5.2 asks for renewal before 75 %).
const RenewFraction = 0.6

// ErrSecurity: a response failed the security checks (signature,
// decryption, padding, sequence number, token or certificate). The channel
// is closed; the error wrapping it says what failed.
var ErrSecurity = errors.New("uaclient: secure channel checks failed")

// Security secures a Channel with a policy other than None.
type Security struct {
	// PolicyURI is the security policy, e.g. ua.SecurityPolicyURIBasic256Sha256.
	PolicyURI string
	// Mode is ua.MessageSecurityModeSign or MessageSecurityModeSignAndEncrypt.
	Mode ua.MessageSecurityMode
	// Certificate is the client's application instance certificate (DER,
	// the leaf, RSA).
	Certificate []byte
	// PrivateKey is Certificate's key.
	PrivateKey *rsa.PrivateKey
	// ServerCertificate is the server's certificate (DER, leaf first) as
	// its endpoint description presents it. The caller has decided to
	// trust it; the Channel only checks that the server uses it.
	ServerCertificate []byte
	// RequestedLifetime is the token lifetime asked for; the server
	// revises it. Default: DefaultTokenLifetime.
	RequestedLifetime time.Duration
}

// chanSec is the security of an open Channel; fixed after Dial.
type chanSec struct {
	policy     string
	mode       ua.MessageSecurityMode
	cert       []byte                        // ours
	key        *rsa.PrivateKey               // ours
	serverCert []byte                        // the server's leaf
	serverPub  *rsa.PublicKey                // the server's key
	thumbprint []byte                        // SHA-1 of the server's leaf
	lifetime   time.Duration                 // asked for
	asym       *uapolicy.EncryptionAlgorithm // signs with ours, encrypts for the server's
}

// token is one security token and the symmetric keys of its nonces.
type token struct {
	id       uint32
	sym      *uapolicy.EncryptionAlgorithm // nil for None
	lifetime time.Duration                 // revised
}

func (s *chanSec) encrypted() bool { return s.mode == ua.MessageSecurityModeSignAndEncrypt }

// newChanSec checks s and prepares the asymmetric algorithm.
func newChanSec(s *Security) (*chanSec, error) {
	if s.Mode != ua.MessageSecurityModeSign && s.Mode != ua.MessageSecurityModeSignAndEncrypt {
		return nil, fmt.Errorf("uaclient: Security.Mode %s: want Sign or SignAndEncrypt", s.Mode)
	}
	if len(s.Certificate) == 0 || s.PrivateKey == nil {
		return nil, errors.New("uaclient: Security.Certificate and PrivateKey are required")
	}
	own, err := x509.ParseCertificate(s.Certificate)
	if err != nil {
		return nil, fmt.Errorf("uaclient: Security.Certificate: %w", err)
	}
	if pub, ok := own.PublicKey.(*rsa.PublicKey); !ok || !pub.Equal(&s.PrivateKey.PublicKey) {
		return nil, errors.New("uaclient: Security.PrivateKey is not the key of Certificate")
	}
	leaf, err := uapolicy.ParseCertificate(s.ServerCertificate)
	if err != nil {
		return nil, fmt.Errorf("uaclient: Security.ServerCertificate: %w", err)
	}
	pub, ok := leaf.PublicKey.(*rsa.PublicKey)
	if !ok {
		return nil, fmt.Errorf("uaclient: Security.ServerCertificate has a %T key; the policies need RSA", leaf.PublicKey)
	}
	asym, err := uapolicy.Asymmetric(s.PolicyURI, s.PrivateKey, pub)
	if err != nil {
		return nil, fmt.Errorf("uaclient: Security.PolicyURI %q: %w", s.PolicyURI, err)
	}
	lifetime := s.RequestedLifetime
	if lifetime <= 0 {
		lifetime = DefaultTokenLifetime
	}
	return &chanSec{
		policy: s.PolicyURI, mode: s.Mode, cert: own.Raw, key: s.PrivateKey,
		serverCert: leaf.Raw, serverPub: pub, thumbprint: uapolicy.Thumbprint(leaf.Raw),
		lifetime: lifetime, asym: asym,
	}, nil
}

// openChunk encodes an OpenSecureChannel request as one chunk with
// sequence number seq, secured asymmetrically when s is not nil.
func (s *chanSec) openChunk(chanID, seq, reqID uint32, req *ua.OpenSecureChannelRequest) ([]byte, error) {
	ash := uasc.NewAsymmetricSecurityHeader(ua.SecurityPolicyURINone, nil, nil)
	if s != nil {
		ash = uasc.NewAsymmetricSecurityHeader(s.policy, s.cert, s.thumbprint)
	}
	m := &uasc.Message{
		MessageHeader: &uasc.MessageHeader{
			Header:                   uasc.NewHeader(uasc.MessageTypeOpenSecureChannel, uasc.ChunkTypeFinal, chanID),
			AsymmetricSecurityHeader: ash,
			SequenceHeader:           uasc.NewSequenceHeader(seq, reqID),
		},
		TypeID:  ua.NewFourByteExpandedNodeID(0, id.OpenSecureChannelRequest_Encoding_DefaultBinary),
		Service: req,
	}
	b, err := m.Encode()
	if err != nil || s == nil {
		return b, err
	}
	return chunksec.Seal(b, msgHeaderLen+ash.Len(), s.asym, true, s.serverPub.Size() > 256)
}

// openPlain checks the asymmetric security header of an OpenSecureChannel
// response chunk raw (message header included), decrypts and verifies it
// when s is not nil and returns its sequence header and body.
func (s *chanSec) openPlain(raw []byte) ([]byte, error) {
	var ash uasc.AsymmetricSecurityHeader
	n, err := ash.Decode(raw[msgHeaderLen:])
	if err != nil {
		return nil, fmt.Errorf("%w: OpenSecureChannel response security header: %v", ErrSecurity, err)
	}
	hdrLen := msgHeaderLen + n
	if s == nil {
		if ash.SecurityPolicyURI != ua.SecurityPolicyURINone {
			return nil, fmt.Errorf("%w: OpenSecureChannel answered with policy %q", ErrSecurity, ash.SecurityPolicyURI)
		}
		if len(raw) < hdrLen+seqHeaderLen {
			return nil, errors.New("uaclient: OpenSecureChannel response truncated")
		}
		return raw[hdrLen:], nil
	}
	switch {
	case ash.SecurityPolicyURI != s.policy:
		return nil, fmt.Errorf("%w: OpenSecureChannel answered with policy %q, not %q", ErrSecurity, ash.SecurityPolicyURI, s.policy)
	case !sameLeaf(ash.SenderCertificate, s.serverCert):
		return nil, fmt.Errorf("%w: the server signed OpenSecureChannel with another certificate than its endpoint's", ErrSecurity)
	case !bytes.Equal(ash.ReceiverCertificateThumbprint, uapolicy.Thumbprint(s.cert)):
		return nil, fmt.Errorf("%w: OpenSecureChannel response is not for our certificate", ErrSecurity)
	}
	ours := s.key.PublicKey.Size()
	p, err := chunksec.Unseal(raw, hdrLen, s.asym, true, ours, s.asym.RemoteSignatureLength(), ours > 256)
	if err != nil {
		return nil, fmt.Errorf("%w: OpenSecureChannel response: %v", ErrSecurity, err)
	}
	return p, nil
}

// newToken derives a token's keys from the response to a request that
// sent clientNonce.
func (s *chanSec) newToken(clientNonce []byte, resp *ua.OpenSecureChannelResponse) (*token, error) {
	t := resp.SecurityToken
	if t == nil {
		return nil, fmt.Errorf("%w: OpenSecureChannel response without a security token", ErrSecurity)
	}
	tok := &token{id: t.TokenID, lifetime: time.Duration(t.RevisedLifetime) * time.Millisecond}
	if s == nil {
		return tok, nil
	}
	if len(resp.ServerNonce) != s.asym.NonceLength() {
		return nil, fmt.Errorf("%w: server nonce of %d bytes, want %d", ErrSecurity, len(resp.ServerNonce), s.asym.NonceLength())
	}
	sym, err := uapolicy.Symmetric(s.policy, clientNonce, resp.ServerNonce)
	if err != nil {
		return nil, fmt.Errorf("uaclient: key derivation: %w", err)
	}
	tok.sym = sym
	return tok, nil
}

// nonce is a fresh client nonce for an OpenSecureChannel request.
func (s *chanSec) nonce() ([]byte, error) {
	if s == nil {
		return []byte{}, nil
	}
	return s.asym.MakeNonce()
}

// sealMsg secures a MSG or CLO chunk with tok.
func (s *chanSec) sealMsg(tok *token, chunk []byte) ([]byte, error) {
	if s == nil {
		return chunk, nil
	}
	return chunksec.Seal(chunk, chunksec.SymHeaderLen, tok.sym, s.encrypted(), false)
}

// msgPlain verifies (and decrypts) a MSG chunk raw secured with tok and
// returns its sequence header and body.
func (s *chanSec) msgPlain(tok *token, raw []byte) ([]byte, error) {
	if s == nil {
		return raw[chunksec.SymHeaderLen:], nil
	}
	a := tok.sym
	p, err := chunksec.Unseal(raw, chunksec.SymHeaderLen, a, s.encrypted(), a.BlockSize(), a.RemoteSignatureLength(), false)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrSecurity, err)
	}
	return p, nil
}

// maxBody is the body bytes per MSG chunk of bufSize bytes.
func (s *chanSec) maxBody(tok *token, bufSize uint32) uint32 {
	if s == nil {
		return chunksec.SymMaxBody(nil, false, bufSize)
	}
	return chunksec.SymMaxBody(tok.sym, s.encrypted(), bufSize)
}

// decodeOpenResponse decodes the body of an OpenSecureChannel response.
func decodeOpenResponse(body []byte) (*ua.OpenSecureChannelResponse, error) {
	_, svc, err := ua.DecodeService(body)
	if err != nil {
		return nil, fmt.Errorf("uaclient: decode OpenSecureChannel response: %w", err)
	}
	resp, ok := svc.(*ua.OpenSecureChannelResponse)
	if !ok {
		if f, isFault := svc.(*ua.ServiceFault); isFault {
			return nil, fmt.Errorf("uaclient: OpenSecureChannel: %w", f.ResponseHeader.ServiceResult)
		}
		return nil, fmt.Errorf("uaclient: OpenSecureChannel answered with %T", svc)
	}
	if s := resp.ResponseHeader.ServiceResult; s != ua.StatusOK {
		return nil, fmt.Errorf("uaclient: OpenSecureChannel: %w", s)
	}
	return resp, nil
}

// sameLeaf reports whether two certificate fields start with the same
// leaf.
func sameLeaf(a, b []byte) bool {
	la, errA := uapolicy.ParseCertificate(a)
	lb, errB := uapolicy.ParseCertificate(b)
	return errA == nil && errB == nil && bytes.Equal(la.Raw, lb.Raw)
}

// seqOf is the sequence number of a sequence header.
func seqOf(p []byte) uint32 { return binary.LittleEndian.Uint32(p) }

// renewAfter is when a token of lifetime should be renewed.
func renewAfter(lifetime time.Duration) time.Duration {
	return time.Duration(float64(lifetime) * RenewFraction)
}
