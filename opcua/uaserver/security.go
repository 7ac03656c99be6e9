package uaserver

import (
	"bytes"
	"crypto/rsa"
	"crypto/x509"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/gopcua/opcua/ua"
	"github.com/gopcua/opcua/uapolicy"
)

// Defaults of Security.
const (
	DefaultMinTokenLifetime = 10 * time.Second
	DefaultMaxTokenLifetime = time.Hour
)

// SecurityPolicies are the security policy URIs an endpoint may offer.
var SecurityPolicies = []string{
	ua.SecurityPolicyURINone,
	ua.SecurityPolicyURIBasic256Sha256,
	ua.SecurityPolicyURIAes128Sha256RsaOaep,
	ua.SecurityPolicyURIAes256Sha256RsaPss,
}

// EndpointSecurity is one security policy and mode offered for sessions.
type EndpointSecurity struct {
	// PolicyURI is one of SecurityPolicies, e.g.
	// ua.SecurityPolicyURIBasic256Sha256.
	PolicyURI string
	// Mode is ua.MessageSecurityModeNone for the None policy and
	// MessageSecurityModeSign or MessageSecurityModeSignAndEncrypt for every
	// other one.
	Mode ua.MessageSecurityMode
}

// Security configures the secure channels and the endpoints offered.
type Security struct {
	// Endpoints are the policy and mode pairs sessions may be created on;
	// each appears in GetEndpoints. A secure channel with policy None is
	// always accepted, for GetEndpoints and FindServers, even when None is
	// not listed; CreateSession on it is then refused
	// (BadSecurityPolicyRejected). Default: None/None only.
	Endpoints []EndpointSecurity

	// Certificate is the server's application instance certificate (DER,
	// the leaf only, RSA). Required, with PrivateKey, when an endpoint
	// other than None is offered.
	Certificate []byte

	// PrivateKey is Certificate's private key.
	PrivateKey *rsa.PrivateKey

	// ValidateClientCertificate decides whether a client's application
	// instance certificate (DER, the leaf) is trusted. It is called on the
	// channel's reader goroutine for each OpenSecureChannel with appURI ""
	// (no ApplicationUri known yet: no URI check), and on the worker for
	// CreateSession with the client's ApplicationUri. It must be safe for
	// concurrent use and should be quick (it delays only its channel). An
	// error refuses the channel or session with its StatusCode() when it
	// has one (interface{ StatusCode() ua.StatusCode }, or a ua.StatusCode
	// itself), else with BadSecurityChecksFailed. Required when an
	// endpoint other than None is offered.
	ValidateClientCertificate func(der []byte, appURI string) error

	// MinTokenLifetime is the shortest RevisedLifetime of a security
	// token: a shorter request is raised to it. Default: 10 s.
	MinTokenLifetime time.Duration

	// MaxTokenLifetime is the longest RevisedLifetime; a longer request, or
	// 0, gets it. Default: 1 h.
	MaxTokenLifetime time.Duration
}

// policyNames are the short names of SecurityPolicies, as configured.
var policyNames = map[string]string{
	"None":                  ua.SecurityPolicyURINone,
	"Basic256Sha256":        ua.SecurityPolicyURIBasic256Sha256,
	"Aes128_Sha256_RsaOaep": ua.SecurityPolicyURIAes128Sha256RsaOaep,
	"Aes256_Sha256_RsaPss":  ua.SecurityPolicyURIAes256Sha256RsaPss,
}

// ParseEndpoint reads "Policy:Mode" as configured in
// OpcUa:Security:Policies (e.g. "Basic256Sha256:SignAndEncrypt",
// "None:None"; case-sensitive, as config stores it).
func ParseEndpoint(s string) (EndpointSecurity, error) {
	name, mode, _ := strings.Cut(s, ":")
	e := EndpointSecurity{PolicyURI: policyNames[name], Mode: ua.MessageSecurityModeFromString(mode)}
	if e.PolicyURI == "" || mode == "" || e.Mode == ua.MessageSecurityModeInvalid {
		return e, fmt.Errorf("uaserver: endpoint %q: want Policy:Mode, e.g. Basic256Sha256:SignAndEncrypt", s)
	}
	return e, e.check()
}

// secured reports whether e needs certificates.
func (e EndpointSecurity) secured() bool { return e.PolicyURI != ua.SecurityPolicyURINone }

// offers reports whether sessions may be created on a channel with policy
// and mode.
func (s *Security) offers(policy string, mode ua.MessageSecurityMode) bool {
	for _, e := range s.Endpoints {
		if e.PolicyURI == policy && e.Mode == mode {
			return true
		}
	}
	return false
}

// offersPolicy reports whether any endpoint uses policy.
func (s *Security) offersPolicy(policy string) bool {
	for _, e := range s.Endpoints {
		if e.PolicyURI == policy {
			return true
		}
	}
	return false
}

// withDefaults returns s with defaults set, or an error naming the first
// invalid field.
func (s Security) withDefaults() (Security, error) {
	if len(s.Endpoints) == 0 {
		s.Endpoints = []EndpointSecurity{{PolicyURI: ua.SecurityPolicyURINone, Mode: ua.MessageSecurityModeNone}}
	}
	defDur(&s.MinTokenLifetime, DefaultMinTokenLifetime)
	defDur(&s.MaxTokenLifetime, DefaultMaxTokenLifetime)
	if s.MinTokenLifetime > s.MaxTokenLifetime {
		return s, fmt.Errorf("uaserver: Config.Security.MinTokenLifetime %s exceeds MaxTokenLifetime %s", s.MinTokenLifetime, s.MaxTokenLifetime)
	}
	secured := false
	for i, e := range s.Endpoints {
		if err := e.check(); err != nil {
			return s, fmt.Errorf("uaserver: Config.Security.Endpoints[%d]: %w", i, err)
		}
		for _, prev := range s.Endpoints[:i] {
			if prev == e {
				return s, fmt.Errorf("uaserver: Config.Security.Endpoints[%d]: %s %s listed twice", i, e.PolicyURI, e.Mode)
			}
		}
		secured = secured || e.secured()
	}
	if !secured {
		return s, nil
	}
	if err := s.checkCertificate(); err != nil {
		return s, err
	}
	if s.ValidateClientCertificate == nil {
		return s, errors.New("uaserver: Config.Security.ValidateClientCertificate is required when a secured endpoint is offered")
	}
	return s, nil
}

func (e EndpointSecurity) check() error {
	known := false
	for _, p := range SecurityPolicies {
		known = known || p == e.PolicyURI
	}
	switch {
	case !known:
		return fmt.Errorf("policy %q: accepted values are %v", e.PolicyURI, SecurityPolicies)
	case !e.secured() && e.Mode != ua.MessageSecurityModeNone:
		return fmt.Errorf("policy None takes mode None, not %s", e.Mode)
	case e.secured() && e.Mode != ua.MessageSecurityModeSign && e.Mode != ua.MessageSecurityModeSignAndEncrypt:
		return fmt.Errorf("policy %s takes mode Sign or SignAndEncrypt, not %s", e.PolicyURI, e.Mode)
	}
	return nil
}

// checkCertificate checks that Certificate is an RSA certificate whose key
// is PrivateKey and whose size every offered policy accepts.
func (s *Security) checkCertificate() error {
	return checkKeyPair(s.Endpoints, s.Certificate, s.PrivateKey, "Config.Security")
}

// securedOffered reports whether an endpoint other than None is offered.
func (s *Security) securedOffered() bool {
	for _, e := range s.Endpoints {
		if e.secured() {
			return true
		}
	}
	return false
}

// checkKeyPair checks that cert (DER) is an RSA certificate whose key is
// key and whose size every policy of eps accepts; field names the pair in
// the error ("Config.Security", "Config.Identities[0]").
func checkKeyPair(eps []EndpointSecurity, der []byte, key *rsa.PrivateKey, field string) error {
	if len(der) == 0 || key == nil {
		return fmt.Errorf("uaserver: %s.Certificate and PrivateKey are required when an endpoint other than None is offered", field)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return fmt.Errorf("uaserver: %s.Certificate: %w", field, err)
	}
	pub, ok := cert.PublicKey.(*rsa.PublicKey)
	if !ok {
		return fmt.Errorf("uaserver: %s.Certificate: a %T key; the policies need RSA", field, cert.PublicKey)
	}
	if !pub.Equal(&key.PublicKey) {
		return fmt.Errorf("uaserver: %s.PrivateKey is not the key of Certificate", field)
	}
	for _, e := range eps {
		if _, err := uapolicy.Asymmetric(e.PolicyURI, key, nil); err != nil {
			return fmt.Errorf("uaserver: %s.Certificate for %s: %w", field, e.PolicyURI, err)
		}
	}
	return nil
}

// validationCode is the status a refusal by ValidateClientCertificate
// answers.
func validationCode(err error) ua.StatusCode {
	var withCode interface{ StatusCode() ua.StatusCode }
	if errors.As(err, &withCode) {
		return withCode.StatusCode()
	}
	var code ua.StatusCode
	if errors.As(err, &code) && code != ua.StatusOK {
		return code
	}
	return ua.StatusBadSecurityChecksFailed
}

// clientKey parses a client's certificate field (its leaf, possibly
// followed by issuer certificates) and returns the leaf and its RSA key.
func clientKey(certs []byte) (*x509.Certificate, *rsa.PublicKey, error) {
	leaf, err := uapolicy.ParseCertificate(certs)
	if err != nil {
		return nil, nil, err
	}
	pub, ok := leaf.PublicKey.(*rsa.PublicKey)
	if !ok {
		return nil, nil, fmt.Errorf("a %T key; the policies need RSA", leaf.PublicKey)
	}
	return leaf, pub, nil
}

// sameCertificate reports whether two certificate fields start with the
// same leaf.
func sameCertificate(a, b []byte) bool {
	la, errA := uapolicy.ParseCertificate(a)
	lb, errB := uapolicy.ParseCertificate(b)
	return errA == nil && errB == nil && bytes.Equal(la.Raw, lb.Raw)
}
