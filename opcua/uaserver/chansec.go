package uaserver

import (
	"bytes"
	"errors"
	"fmt"
	"time"

	"github.com/gopcua/opcua/ua"
	"github.com/gopcua/opcua/uapolicy"
	"github.com/gopcua/opcua/uasc"

	"github.com/otopcua/otopcua/opcua/chunksec"
)

// The crypto of a secure channel (OPC UA Part 6 §6.7): the asymmetric
// OpenSecureChannel chunks, the symmetric MSG and CLO chunks, padding and
// sequence numbers. The algorithms and key derivation are gopcua's
// uapolicy; this file only frames them.

// chanSecurity is the security of a channel, fixed by its first
// OpenSecureChannel (a renewal must repeat it). Written by the reader
// goroutine before the channel is opened, read-only afterwards.
type chanSecurity struct {
	policy     string
	mode       ua.MessageSecurityMode
	remoteCert []byte // the client's certificate field (leaf first); nil for None
	thumbprint []byte // SHA-1 of the client's leaf; nil for None
	// asym signs with our key and encrypts for the client's; nil for None.
	// Used by the reader goroutine only.
	asym *uapolicy.EncryptionAlgorithm
}

// secured reports whether chunks are signed.
func (s *chanSecurity) secured() bool { return s.mode == ua.MessageSecurityModeSign || s.encrypted() }

// encrypted reports whether MSG and CLO chunks are encrypted.
func (s *chanSecurity) encrypted() bool { return s.mode == ua.MessageSecurityModeSignAndEncrypt }

// secToken is one security token of a channel and the symmetric keys
// derived from its nonces.
type secToken struct {
	id uint32
	// expires is when messages secured with the token stop being accepted:
	// its RevisedLifetime plus a quarter (Part 4 §5.5.2's leniency), real
	// time.
	expires time.Time
	sym     *uapolicy.EncryptionAlgorithm // nil for None; safe for concurrent use
}

// tokenExpiry is when a token issued at now with lifetime stops being
// accepted.
func tokenExpiry(now time.Time, lifetime time.Duration) time.Time {
	return now.Add(lifetime + lifetime/4)
}

// errSecurity is a chunk that fails the security checks; it closes the
// channel with code.
type errSecurity struct {
	code   ua.StatusCode
	reason string
}

func (e *errSecurity) Error() string { return e.reason + ": " + e.code.Error() }

func securityErr(code ua.StatusCode, format string, args ...any) *errSecurity {
	return &errSecurity{code: code, reason: fmt.Sprintf(format, args...)}
}

// unseal frames the chunk crypto the same way the client does
// (opcua/chunksec); a failed unseal closes the channel with
// BadSecurityChecksFailed.
func unseal(b []byte, hdrLen int, alg *uapolicy.EncryptionAlgorithm, decrypt bool, blockSize, sigLen int, extra bool) ([]byte, *errSecurity) {
	p, err := chunksec.Unseal(b, hdrLen, alg, decrypt, blockSize, sigLen, extra)
	if err != nil {
		return nil, securityErr(ua.StatusBadSecurityChecksFailed, "%v", err)
	}
	return p, nil
}

// unsealSym verifies (and decrypts) a MSG or CLO chunk b secured with tok
// and returns its sequence header and body.
func (s *chanSecurity) unsealSym(tok *secToken, b []byte) ([]byte, *errSecurity) {
	if !s.secured() {
		return b[chunksec.SymHeaderLen:], nil
	}
	a := tok.sym
	return unseal(b, chunksec.SymHeaderLen, a, s.encrypted(), a.BlockSize(), a.RemoteSignatureLength(), false)
}

// sealSym secures a MSG chunk (symHeaderLen bytes of headers, then body)
// with tok.
func (s *chanSecurity) sealSym(tok *secToken, chunk []byte) ([]byte, error) {
	if !s.secured() {
		return chunk, nil
	}
	return chunksec.Seal(chunk, chunksec.SymHeaderLen, tok.sym, s.encrypted(), false)
}

// symMaxBody is the most body bytes one MSG chunk of bufSize bytes carries
// (Part 6 §6.7.2.5).
func (s *chanSecurity) symMaxBody(a *uapolicy.EncryptionAlgorithm, bufSize uint32) uint32 {
	if !s.secured() {
		a = nil
	}
	return chunksec.SymMaxBody(a, s.encrypted(), bufSize)
}

// openSecurity checks the asymmetric security header of an
// OpenSecureChannel chunk with a policy other than None and returns the
// channel security it asks for (mode not yet known) and the chunk's
// sequence header and body. For a renewal, cur is the channel's security,
// which the chunk must repeat. id is the identity the channel presents:
// the chunk must be encrypted for its certificate, and its key decrypts.
func (srv *Server) openSecurity(id *appIdentity, m *uasc.MessageChunk, b []byte, cur *chanSecurity) (*chanSecurity, []byte, *errSecurity) {
	sec := &srv.cfg.Security
	h := m.AsymmetricSecurityHeader
	switch {
	case !sec.offersPolicy(h.SecurityPolicyURI):
		return nil, nil, securityErr(ua.StatusBadSecurityPolicyRejected, "security policy %q is not offered", h.SecurityPolicyURI)
	case cur != nil && (cur.policy != h.SecurityPolicyURI || !bytes.Equal(cur.remoteCert, h.SenderCertificate)):
		return nil, nil, securityErr(ua.StatusBadSecurityChecksFailed, "renewal with another policy or certificate")
	case !bytes.Equal(h.ReceiverCertificateThumbprint, id.thumbprint):
		return nil, nil, securityErr(ua.StatusBadCertificateInvalid, "receiver thumbprint is not our certificate's")
	}
	leaf, pub, err := clientKey(h.SenderCertificate)
	if err != nil {
		return nil, nil, securityErr(ua.StatusBadCertificateInvalid, "sender certificate: %v", err)
	}
	if cur == nil {
		if err := sec.ValidateClientCertificate(leaf.Raw, ""); err != nil {
			return nil, nil, securityErr(validationCode(err), "client certificate refused: %v", err)
		}
	}
	asym, err := uapolicy.Asymmetric(h.SecurityPolicyURI, id.key, pub)
	if err != nil {
		return nil, nil, securityErr(ua.StatusBadSecurityChecksFailed, "client key: %v", err)
	}
	hdrLen := len(b) - len(m.Data)
	ours := id.key.PublicKey.Size()
	p, serr := unseal(b, hdrLen, asym, true, ours, asym.RemoteSignatureLength(), ours > 256)
	if serr != nil {
		return nil, nil, serr
	}
	cs := &chanSecurity{
		policy:     h.SecurityPolicyURI,
		remoteCert: bytes.Clone(h.SenderCertificate),
		thumbprint: uapolicy.Thumbprint(leaf.Raw),
		asym:       asym,
	}
	return cs, p, nil
}

// sealOpen secures an encoded OpenSecureChannel response chunk whose
// message and asymmetric security headers take hdrLen bytes.
func (s *chanSecurity) sealOpen(chunk []byte, hdrLen int) ([]byte, error) {
	if s.asym == nil {
		return chunk, nil
	}
	return chunksec.Seal(chunk, hdrLen, s.asym, true, s.asym.BlockSize() > 256)
}

// newSymmetric derives the keys of a token from the nonces.
func newSymmetric(policy string, serverNonce, clientNonce []byte) (*uapolicy.EncryptionAlgorithm, error) {
	if policy == ua.SecurityPolicyURINone {
		return nil, nil
	}
	return uapolicy.Symmetric(policy, serverNonce, clientNonce)
}

// serverSignature signs data (Part 4 §5.6.2: the client's certificate and
// nonce) with the key of id, the channel's identity, for a session on a
// channel with sec; nil for None.
func serverSignature(id *appIdentity, sec *chanSecurity, data []byte) (*ua.SignatureData, error) {
	if !sec.secured() {
		return &ua.SignatureData{}, nil
	}
	_, pub, err := clientKey(sec.remoteCert)
	if err != nil {
		return nil, err
	}
	a, err := uapolicy.Asymmetric(sec.policy, id.key, pub)
	if err != nil {
		return nil, err
	}
	sig, err := a.Signature(data)
	if err != nil {
		return nil, err
	}
	return &ua.SignatureData{Algorithm: a.SignatureURI(), Signature: sig}, nil
}

// verifyPeerSignature checks a signature made with the private key of
// certs' leaf over data for policy (id is the channel's identity, whose
// key completes the algorithm).
func verifyPeerSignature(id *appIdentity, policy string, certs, data []byte, sig *ua.SignatureData) error {
	_, pub, err := clientKey(certs)
	if err != nil {
		return err
	}
	a, err := uapolicy.Asymmetric(policy, id.key, pub)
	if err != nil {
		return err
	}
	if sig == nil || len(sig.Signature) == 0 {
		return errors.New("no signature")
	}
	if sig.Algorithm != a.SignatureURI() {
		return fmt.Errorf("signature algorithm %q, want %q", sig.Algorithm, a.SignatureURI())
	}
	return a.VerifySignature(data, sig.Signature)
}
