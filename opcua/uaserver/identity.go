package uaserver

import (
	"context"
	"crypto/rsa"
	"crypto/subtle"
	"crypto/x509"
	"encoding/binary"
	"sync"
	"time"

	"github.com/gopcua/opcua/ua"
	"github.com/gopcua/opcua/uapolicy"
)

// Rights is a set of what a session may do (Config.Authorization).
type Rights uint8

// The rights. A Write needs RightWrite, a Read RightRead, a method call
// the Right its Method names (RightCall unless set).
const (
	RightRead Rights = 1 << iota
	RightWrite
	RightAcknowledge
	RightCall

	// AllRights is every right.
	AllRights = RightRead | RightWrite | RightAcknowledge | RightCall
)

// Has reports whether r holds every right of want.
func (r Rights) Has(want Rights) bool { return r&want == want }

// AnonymousRole is the role of a session activated with an anonymous (or
// absent) identity token, looked up in Config.Authorization.
const AnonymousRole = "Anonymous"

// Users is the user directory behind UserName and X509 identity tokens.
// Its methods are called concurrently, on the worker goroutine of the
// activating client's channel: that channel waits (a password check takes
// a bcrypt), others do not. They return StatusOK, BadUserAccessDenied for
// an unknown user, a wrong password or a locked name or address (counted
// as a failed activation of the address), or another Bad code (the
// directory is busy or unreachable: BadResourceUnavailable), not counted.
type Users interface {
	// Verify checks name's password, sent from client IP address addr, and
	// returns the user's role.
	Verify(ctx context.Context, name, password, addr string) (role string, code ua.StatusCode)
	// Role returns the role of user name, whose certificate was trusted.
	Role(ctx context.Context, name string) (role string, code ua.StatusCode)
}

// identity is who a session was activated as.
type identity struct {
	user, role string
	rights     Rights
}

// userTokenSecurityPolicy is the security policy UserName and X509 token
// policies name: the password is encrypted, and the user token signed,
// with its asymmetric algorithms, whatever the channel's policy (on a None
// channel too).
const userTokenSecurityPolicy = ua.SecurityPolicyURIBasic256Sha256

// PolicyIds of the UserName and X509 token policies.
const (
	userNamePolicyID    = "username_basic256sha256"
	certificatePolicyID = "certificate_basic256sha256"
)

// userTokenPolicies are the token policies of every endpoint: anonymous
// (unless DisableAnonymous), UserName when the server has a certificate
// and Users, X509 when it also has ValidateUserCertificate. GetEndpoints
// and CreateSession list them; id is the identity they are described
// with (its key decrypts the passwords).
func (s *Server) userTokenPolicies(id *appIdentity) []*ua.UserTokenPolicy {
	var out []*ua.UserTokenPolicy
	if !s.cfg.DisableAnonymous {
		out = append(out, &ua.UserTokenPolicy{PolicyID: anonymousPolicyID, TokenType: ua.UserTokenTypeAnonymous})
	}
	if id.key != nil && s.cfg.Users != nil {
		out = append(out, &ua.UserTokenPolicy{PolicyID: userNamePolicyID, TokenType: ua.UserTokenTypeUserName,
			SecurityPolicyURI: userTokenSecurityPolicy})
		if s.cfg.ValidateUserCertificate != nil {
			out = append(out, &ua.UserTokenPolicy{PolicyID: certificatePolicyID, TokenType: ua.UserTokenTypeCertificate,
				SecurityPolicyURI: userTokenSecurityPolicy})
		}
	}
	if out == nil {
		out = []*ua.UserTokenPolicy{}
	}
	return out
}

// rightsOf returns the rights of role.
func (s *Server) rightsOf(role string) Rights {
	if s.cfg.Authorization == nil {
		return AllRights
	}
	return s.cfg.Authorization[role]
}

// identify checks the identity token of an ActivateSession of sess from
// client address addr, whose last server nonce is nonce, on a channel
// presenting identity id (whose key decrypts a password and whose
// certificate a user certificate signs). A refusal is
// counted against addr (see Config.MaxActivationFailuresPerAddress) unless
// the user directory failed; an address locked out is refused unchecked.
func (s *Server) identify(ctx context.Context, id *appIdentity, addr string, nonce []byte, req *ua.ActivateSessionRequest) (identity, ua.StatusCode) {
	now := s.cfg.Clock.Now()
	if s.activations.locked(addr, now) {
		s.counters.refuse(LimitActivationFailures)
		return identity{}, ua.StatusBadUserAccessDenied
	}
	who, code := s.checkToken(ctx, id, addr, nonce, req)
	switch code {
	case ua.StatusOK:
		who.rights = s.rightsOf(who.role)
	case ua.StatusBadUserAccessDenied, ua.StatusBadIdentityTokenInvalid, ua.StatusBadIdentityTokenRejected,
		ua.StatusBadUserSignatureInvalid:
		if s.activations.fail(addr, s.cfg.Clock.Now()) {
			s.counters.refuse(LimitActivationFailures)
			s.log.Warn("uaserver: address locked out of ActivateSession after too many refused identities",
				"client", addr, "for", s.cfg.ActivationLockout)
		}
	}
	return who, code
}

// checkToken checks one identity token (Part 4 §5.6.3, §7.36).
func (s *Server) checkToken(ctx context.Context, id *appIdentity, addr string, nonce []byte, req *ua.ActivateSessionRequest) (identity, ua.StatusCode) {
	var tok any
	if eo := req.UserIdentityToken; eo != nil {
		tok = eo.Value
	}
	switch tok := tok.(type) {
	case nil, *ua.AnonymousIdentityToken:
		if s.cfg.DisableAnonymous {
			return identity{}, ua.StatusBadIdentityTokenRejected
		}
		return identity{user: AnonymousUser, role: AnonymousRole}, ua.StatusOK
	case *ua.UserNameIdentityToken:
		return s.checkUserName(ctx, id, addr, nonce, tok)
	case *ua.X509IdentityToken:
		return s.checkCertificate(ctx, id, nonce, tok, req.UserTokenSignature)
	default: // Issued, unknown
		return identity{}, ua.StatusBadIdentityTokenInvalid
	}
}

// checkUserName decrypts the password (never accepted in clear text) and
// asks Users.
func (s *Server) checkUserName(ctx context.Context, id *appIdentity, addr string, nonce []byte, tok *ua.UserNameIdentityToken) (identity, ua.StatusCode) {
	key := id.key
	if key == nil || s.cfg.Users == nil { // the policy is not offered
		return identity{}, ua.StatusBadIdentityTokenInvalid
	}
	if tok.PolicyID != userNamePolicyID || tok.UserName == "" {
		return identity{}, ua.StatusBadIdentityTokenInvalid
	}
	password, ok := decryptPassword(key, tok.EncryptionAlgorithm, tok.Password, nonce)
	if !ok {
		return identity{}, ua.StatusBadIdentityTokenInvalid
	}
	role, code := s.cfg.Users.Verify(ctx, tok.UserName, password, addr)
	if code != ua.StatusOK {
		return identity{}, code
	}
	return identity{user: tok.UserName, role: role}, ua.StatusOK
}

// decryptPassword opens a UserName token's password (Part 4 §7.41): the
// token policy's asymmetric encryption of a little-endian uint32 length,
// the password and the server nonce. alg must be that policy's algorithm
// URI; an empty one (clear text) is refused.
func decryptPassword(key *rsa.PrivateKey, alg string, secret, nonce []byte) (string, bool) {
	enc, err := uapolicy.Asymmetric(userTokenSecurityPolicy, key, nil)
	if err != nil || alg == "" || alg != enc.EncryptionURI() || len(nonce) == 0 {
		return "", false
	}
	plain, err := enc.Decrypt(secret)
	if err != nil || len(plain) < 4 {
		return "", false
	}
	n := int(binary.LittleEndian.Uint32(plain))
	body := plain[4:]
	if n < len(nonce) || n > len(body) {
		return "", false
	}
	body = body[:n]
	pw, suffix := body[:n-len(nonce)], body[n-len(nonce):]
	if subtle.ConstantTimeCompare(suffix, nonce) != 1 {
		return "", false
	}
	return string(pw), true
}

// checkCertificate verifies the user token signature over the server
// certificate and nonce with the certificate's key, has the certificate
// validated, and asks Users for its user's role.
func (s *Server) checkCertificate(ctx context.Context, id *appIdentity, nonce []byte, tok *ua.X509IdentityToken, sig *ua.SignatureData) (identity, ua.StatusCode) {
	if s.cfg.ValidateUserCertificate == nil || s.cfg.Users == nil || id.cert == nil {
		return identity{}, ua.StatusBadIdentityTokenInvalid // the policy is not offered
	}
	if tok.PolicyID != certificatePolicyID {
		return identity{}, ua.StatusBadIdentityTokenInvalid
	}
	cert, err := x509.ParseCertificate(tok.CertificateData)
	if err != nil {
		return identity{}, ua.StatusBadIdentityTokenInvalid
	}
	pub, ok := cert.PublicKey.(*rsa.PublicKey)
	if !ok {
		return identity{}, ua.StatusBadIdentityTokenInvalid
	}
	enc, err := uapolicy.Asymmetric(userTokenSecurityPolicy, nil, pub)
	if err != nil {
		return identity{}, ua.StatusBadIdentityTokenInvalid // key size outside the policy's range
	}
	signed := append(append([]byte{}, id.cert...), nonce...)
	if sig == nil || sig.Algorithm != enc.SignatureURI() || enc.VerifySignature(signed, sig.Signature) != nil {
		return identity{}, ua.StatusBadUserSignatureInvalid
	}
	name, err := s.cfg.ValidateUserCertificate(tok.CertificateData)
	if err != nil {
		s.log.Warn("uaserver: user certificate refused", "subject", cert.Subject.String(), "err", err)
		return identity{}, ua.StatusBadIdentityTokenRejected
	}
	role, code := s.cfg.Users.Role(ctx, name)
	if code != ua.StatusOK {
		return identity{}, code
	}
	return identity{user: name, role: role}, ua.StatusOK
}

// activationLimiter counts refused activations per client address and
// locks an address that reaches max within one window for that window. At
// most capacity addresses are tracked; beyond, the stalest is forgotten.
// Its mu is a leaf lock.
type activationLimiter struct {
	mu       sync.Mutex
	max      int
	window   time.Duration
	capacity int
	byAddr   map[string]*activationFailures // mu must be held.
}

type activationFailures struct {
	count       int
	start       time.Time // first failure of the window
	lockedUntil time.Time
}

func newActivationLimiter(max int, window time.Duration, capacity int) *activationLimiter {
	return &activationLimiter{max: max, window: window, capacity: capacity, byAddr: make(map[string]*activationFailures)}
}

// locked reports whether addr is locked out at now.
func (l *activationLimiter) locked(addr string, now time.Time) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	f, ok := l.byAddr[addr]
	return ok && now.Before(f.lockedUntil)
}

// fail records one refusal of addr at now and reports whether it locks
// the address.
func (l *activationLimiter) fail(addr string, now time.Time) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	f, ok := l.byAddr[addr]
	if !ok {
		l.makeRoomLocked(now)
		f = &activationFailures{}
		l.byAddr[addr] = f
	}
	if f.count == 0 || now.Sub(f.start) >= l.window {
		f.count, f.start = 0, now
	}
	f.count++
	if f.count < l.max {
		return false
	}
	f.count = 0
	f.lockedUntil = now.Add(l.window)
	return true
}

// makeRoomLocked drops, when the table is full, the records that no
// longer matter, then the one whose window began first. mu must be held.
func (l *activationLimiter) makeRoomLocked(now time.Time) {
	if len(l.byAddr) < l.capacity {
		return
	}
	var oldest string
	var oldestAt time.Time
	for a, f := range l.byAddr {
		if now.Sub(f.start) >= l.window && !now.Before(f.lockedUntil) {
			delete(l.byAddr, a)
			continue
		}
		if oldest == "" || f.start.Before(oldestAt) {
			oldest, oldestAt = a, f.start
		}
	}
	if len(l.byAddr) >= l.capacity {
		delete(l.byAddr, oldest)
	}
}
