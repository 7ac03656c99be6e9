package uaclient

import (
	"crypto/rsa"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/gopcua/opcua/ua"
	"github.com/gopcua/opcua/uapolicy"
)

// UserName is a user name and password a session is activated with.
type UserName struct {
	Name, Password string
}

// ErrNoUserNameToken: the server offers no UserName token policy whose
// password is encrypted on the channel's endpoint. The password is never
// sent in clear text.
var ErrNoUserNameToken = errors.New("the server offers no UserName token")

// ActivationError: ActivateSession refused the session's identity (a
// wrong user name or password: BadUserAccessDenied; a token the server
// could not open: BadIdentityTokenInvalid; ...).
type ActivationError struct {
	// User is the user name, "" for an anonymous session.
	User string
	// Code is the status the server answered with.
	Code ua.StatusCode
}

func (e *ActivationError) Error() string {
	who := "an anonymous session"
	if e.User != "" {
		who = fmt.Sprintf("user %q", e.User)
	}
	return fmt.Sprintf("the server refused %s: %s", who, StatusText(e.Code))
}

// Unwrap returns the status code, for errors.Is(err, ua.StatusBad…).
func (e *ActivationError) Unwrap() error { return e.Code }

// StatusText names a status code the OPC UA way, "BadUserAccessDenied
// (0x801F0000): User does not have permission to perform the requested
// operation."
func StatusText(c ua.StatusCode) string {
	d, ok := ua.StatusCodes[c&0xFFFF0000]
	if !ok {
		return fmt.Sprintf("0x%08X", uint32(c))
	}
	s := fmt.Sprintf("%s (0x%08X)", strings.TrimPrefix(d.Name, "Status"), uint32(c))
	if d.Text != "" {
		s += ": " + d.Text
	}
	return s
}

// userNamePolicy finds the UserName token policy of the None endpoints in
// eps and the security policy that encrypts its password: the token
// policy's SecurityPolicyUri, or the endpoint's when it names none. A
// policy that would encrypt with None (clear text) does not count.
func userNamePolicy(eps []*ua.EndpointDescription) (policyID, securityPolicy string, err error) {
	clearText := false
	// The None endpoint's policy first (the session's, on a None channel);
	// a server that offers only secured endpoints lists its UserName
	// policies there, encrypted with the token's or the endpoint's policy.
	none := func(e *ua.EndpointDescription) bool {
		return e.SecurityPolicyURI == ua.SecurityPolicyURINone && e.SecurityMode == ua.MessageSecurityModeNone
	}
	ordered := slices.Concat(slices.DeleteFunc(slices.Clone(eps), func(e *ua.EndpointDescription) bool { return !none(e) }),
		slices.DeleteFunc(slices.Clone(eps), none))
	for _, e := range ordered {
		for _, t := range e.UserIdentityTokens {
			if t.TokenType != ua.UserTokenTypeUserName {
				continue
			}
			uri := t.SecurityPolicyURI
			if uri == "" {
				uri = e.SecurityPolicyURI
			}
			if uri == ua.SecurityPolicyURINone {
				clearText = true
				continue
			}
			return t.PolicyID, uri, nil
		}
	}
	if clearText {
		return "", "", fmt.Errorf("%w with an encrypted password: its UserName token policy has SecurityPolicyUri None "+
			"(the password would travel in clear text), so it is not sent", ErrNoUserNameToken)
	}
	return "", "", fmt.Errorf("%w; it needs an application instance certificate to receive an encrypted password "+
		"(for otopcua: OpcUa:Security:AllowAnonymous false, or a secured policy in OpcUa:Security:Policies)", ErrNoUserNameToken)
}

// userNameToken builds the UserNameIdentityToken of u for a session whose
// CreateSession answered cs (Part 4 §7.41): the password and the server
// nonce, prefixed with their length as a little-endian uint32, encrypted
// with the asymmetric algorithm of the token policy's security policy
// under the server certificate's public key.
func userNameToken(u *UserName, cs *ua.CreateSessionResponse) (*ua.UserNameIdentityToken, error) {
	policyID, uri, err := userNamePolicy(cs.ServerEndpoints)
	if err != nil {
		return nil, err
	}
	if len(cs.ServerCertificate) == 0 {
		return nil, fmt.Errorf("%w: CreateSession returned no server certificate", ErrNoUserNameToken)
	}
	if len(cs.ServerNonce) == 0 {
		return nil, errors.New("CreateSession returned no server nonce: the password cannot be encrypted")
	}
	cert, err := uapolicy.ParseCertificate(cs.ServerCertificate)
	if err != nil {
		return nil, fmt.Errorf("the server certificate: %w", err)
	}
	key, ok := cert.PublicKey.(*rsa.PublicKey)
	if !ok {
		return nil, fmt.Errorf("the server certificate has a %T key, not RSA", cert.PublicKey)
	}
	enc, err := uapolicy.Asymmetric(uri, nil, key)
	if err != nil {
		return nil, fmt.Errorf("UserName token policy %s: %w", uri, err)
	}
	secret := make([]byte, 4, 4+len(u.Password)+len(cs.ServerNonce))
	binary.LittleEndian.PutUint32(secret, uint32(len(u.Password)+len(cs.ServerNonce)))
	secret = append(append(secret, u.Password...), cs.ServerNonce...)
	pass, err := enc.Encrypt(secret)
	clear(secret)
	if err != nil {
		return nil, fmt.Errorf("encrypt the password: %w", err)
	}
	return &ua.UserNameIdentityToken{
		PolicyID:            policyID,
		UserName:            u.Name,
		Password:            pass,
		EncryptionAlgorithm: enc.EncryptionURI(),
	}, nil
}
