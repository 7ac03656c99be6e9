package pki

import (
	"bytes"
	"crypto/sha1"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"slices"
	"time"

	"github.com/gopcua/opcua/ua"
)

// maxChainDepth bounds the issuers followed from a leaf.
const maxChainDepth = 8

// maxCache and maxLogged bound the per-snapshot cache of accepted
// certificates and the set of thumbprints already logged as refused.
const (
	maxCache  = 10000
	maxLogged = 10000
)

// ValidationError is why Validate refused a certificate. Code is the OPC
// UA status the secure channel answers with (OPC UA Part 4, Table 106).
type ValidationError struct {
	Code   ua.StatusCode
	Reason string
}

func (e *ValidationError) Error() string {
	return fmt.Sprintf("%s: %s", codeName(e.Code), e.Reason)
}

// StatusCode is Code, so that a caller that only knows the error (the
// secure channel's ValidateClientCertificate) answers the refusal's own
// status rather than BadSecurityChecksFailed.
func (e *ValidationError) StatusCode() ua.StatusCode { return e.Code }

func codeName(c ua.StatusCode) string {
	if d, ok := ua.StatusCodes[c]; ok {
		return d.Name
	}
	return fmt.Sprintf("0x%08X", uint32(c))
}

func refuse(code ua.StatusCode, format string, args ...any) *ValidationError {
	return &ValidationError{Code: code, Reason: fmt.Sprintf(format, args...)}
}

// accepted is what is left to check of a certificate that passed every
// check that depends only on the trust lists.
type accepted struct {
	leaf      *x509.Certificate
	issuerNB  time.Time // latest NotBefore of the issuers
	issuerNA  time.Time // earliest NotAfter of the issuers
	hasIssuer bool
}

// Validate checks a peer's (client's) application instance certificate, in
// the order of OPC UA Part 4 Table 106: structure, chain, signatures, trust
// list, validity periods, ApplicationUri (when appURI is not ""), key
// usage and revocation. der is one DER certificate or a chain (leaf first,
// as the SenderCertificate of an OpenSecureChannel carries it).
//
// The error is a *ValidationError. An untrusted certificate (or one whose
// issuer is unknown) is stored in rejected/certs; with AutoAcceptUntrusted an
// untrusted self-signed or otherwise complete chain is copied to
// trusted/certs instead and the remaining checks apply. Each refused
// certificate is logged once, and of the refusals with one status at most
// one a minute (with the count of the others not logged). A certificate
// accepted once is cached until the trust lists change, so a repeat costs a hash, a map look-up and the
// time and URI checks.
func (s *Store) Validate(der []byte, appURI string) error {
	key := sha1.Sum(der)
	snap := s.current()
	s.mu.Lock()
	a := snap.cache[key]
	s.mu.Unlock()
	if a == nil {
		certs, err := x509.ParseCertificates(der)
		if err != nil || len(certs) == 0 {
			return s.refused(key, refuse(ua.StatusBadCertificateInvalid, "the certificate cannot be parsed: %v", err))
		}
		leafThumb := sha1.Sum(certs[0].Raw)
		var verr *ValidationError
		if a, verr = s.verifyStatic(snap, certs); verr != nil {
			return s.refused(leafThumb, verr)
		}
		s.mu.Lock()
		if len(snap.cache) >= maxCache {
			clear(snap.cache)
		}
		snap.cache[key] = a
		s.mu.Unlock()
	}
	if verr := s.verifyDynamic(a, appURI); verr != nil {
		return s.refused(sha1.Sum(a.leaf.Raw), verr)
	}
	return nil
}

// verifyStatic runs the checks that depend only on the certificate and the
// trust lists, then the validity periods; it returns the cache entry.
func (s *Store) verifyStatic(snap *snapshot, certs []*x509.Certificate) (*accepted, *ValidationError) {
	leaf := certs[0]
	chain, verr := buildChain(leaf, certs[1:], snap.issuers)
	if verr != nil {
		if verr.Code == ua.StatusBadCertificateChainIncomplete {
			s.storeRejected(leaf)
		}
		return nil, verr
	}
	if verr := s.checkTrust(snap, chain); verr != nil {
		return nil, verr
	}
	a := &accepted{leaf: leaf}
	for _, c := range chain[1:] {
		if !a.hasIssuer || c.NotBefore.After(a.issuerNB) {
			a.issuerNB = c.NotBefore
		}
		if !a.hasIssuer || c.NotAfter.Before(a.issuerNA) {
			a.issuerNA = c.NotAfter
		}
		a.hasIssuer = true
	}
	if verr := checkTimes(a, s.clock.Now()); verr != nil {
		return nil, verr
	}
	if verr := checkUsage(leaf); verr != nil {
		return nil, verr
	}
	if verr := checkRevocation(chain, snap.crls); verr != nil {
		return nil, verr
	}
	return a, nil
}

// verifyDynamic runs the checks that depend on the call: time and URI.
func (s *Store) verifyDynamic(a *accepted, appURI string) *ValidationError {
	if verr := checkTimes(a, s.clock.Now()); verr != nil {
		return verr
	}
	if appURI == "" {
		return nil
	}
	uris := ApplicationURIs(a.leaf)
	if slices.Contains(uris, appURI) {
		return nil
	}
	return refuse(ua.StatusBadCertificateURIInvalid, "the certificate's ApplicationUri %q is not the client's %q", uris, appURI)
}

// buildChain follows issuers from leaf through extra (the certificates sent
// with it) and known (trusted/certs and issuers/certs) to a self-signed
// certificate. The result starts with leaf.
func buildChain(leaf *x509.Certificate, extra, known []*x509.Certificate) ([]*x509.Certificate, *ValidationError) {
	chain := []*x509.Certificate{leaf}
	for cur := leaf; ; {
		if bytes.Equal(cur.RawIssuer, cur.RawSubject) {
			if err := cur.CheckSignature(cur.SignatureAlgorithm, cur.RawTBSCertificate, cur.Signature); err != nil {
				return nil, refuse(ua.StatusBadCertificateInvalid, "the self-signature of %q does not verify: %v", cur.Subject, err)
			}
			return chain, nil
		}
		if len(chain) > maxChainDepth {
			return nil, refuse(ua.StatusBadCertificateChainIncomplete, "the chain of %q is longer than %d certificates", leaf.Subject, maxChainDepth)
		}
		parent, verr := findIssuer(cur, extra, known)
		if verr != nil {
			return nil, verr
		}
		chain = append(chain, parent)
		cur = parent
	}
}

// findIssuer returns the certificate that signed c.
func findIssuer(c *x509.Certificate, lists ...[]*x509.Certificate) (*x509.Certificate, *ValidationError) {
	var notCA *x509.Certificate
	for _, list := range lists {
		for _, p := range list {
			if !bytes.Equal(p.RawSubject, c.RawIssuer) {
				continue
			}
			err := c.CheckSignatureFrom(p)
			if err == nil {
				return p, nil
			}
			var cv x509.ConstraintViolationError
			if errors.As(err, &cv) && p.CheckSignature(c.SignatureAlgorithm, c.RawTBSCertificate, c.Signature) == nil {
				notCA = p // p's key signed c, but p may not sign certificates
			}
		}
	}
	if notCA != nil {
		return nil, refuse(ua.StatusBadCertificateIssuerUseNotAllowed, "the issuer %q of %q is not a certificate authority allowed to sign certificates", notCA.Subject, c.Subject)
	}
	return nil, refuse(ua.StatusBadCertificateChainIncomplete, "the issuer %q of %q is not in trusted/certs or issuers/certs", c.Issuer, c.Subject)
}

// checkTrust accepts a chain with any certificate in trusted/certs. An
// untrusted one goes to rejected/certs, or with AutoAcceptUntrusted to
// trusted/certs.
func (s *Store) checkTrust(snap *snapshot, chain []*x509.Certificate) *ValidationError {
	for _, c := range chain {
		if _, ok := snap.trusted[sha1.Sum(c.Raw)]; ok {
			return nil
		}
	}
	leaf := chain[0]
	if s.autoAccept {
		if err := s.writeCert(DirTrustedCerts, leaf); err != nil {
			s.log.Error("pki: auto-accepting an untrusted certificate failed", "subject", leaf.Subject.String(), "thumbprint", thumbHex(sha1.Sum(leaf.Raw)), "err", err)
			return refuse(ua.StatusBadCertificateUntrusted, "%q is not trusted and could not be auto-accepted: %v", leaf.Subject, err)
		}
		s.log.Warn("pki: untrusted certificate accepted and trusted because OpcUa:Security:AutoAcceptUntrusted is true",
			"subject", leaf.Subject.String(), "applicationUri", ApplicationURIs(leaf), "thumbprint", thumbHex(sha1.Sum(leaf.Raw)))
		s.invalidate()
		return nil
	}
	s.storeRejected(leaf)
	return refuse(ua.StatusBadCertificateUntrusted, "%q (thumbprint %s) is not trusted; it is in rejected/certs until an operator runs otopcua pki trust", leaf.Subject, thumbHex(sha1.Sum(leaf.Raw)))
}

func checkTimes(a *accepted, now time.Time) *ValidationError {
	if now.Before(a.leaf.NotBefore) || now.After(a.leaf.NotAfter) {
		return refuse(ua.StatusBadCertificateTimeInvalid, "%q is valid from %s to %s, not at %s", a.leaf.Subject,
			a.leaf.NotBefore.UTC().Format(time.RFC3339), a.leaf.NotAfter.UTC().Format(time.RFC3339), now.UTC().Format(time.RFC3339))
	}
	if a.hasIssuer && (now.Before(a.issuerNB) || now.After(a.issuerNA)) {
		return refuse(ua.StatusBadCertificateIssuerTimeInvalid, "an issuer of %q is valid only from %s to %s, not at %s", a.leaf.Subject,
			a.issuerNB.UTC().Format(time.RFC3339), a.issuerNA.UTC().Format(time.RFC3339), now.UTC().Format(time.RFC3339))
	}
	return nil
}

// checkUsage requires digitalSignature and keyEncipherment or
// dataEncipherment, and clientAuth when extended key usages are listed.
func checkUsage(leaf *x509.Certificate) *ValidationError {
	ku := leaf.KeyUsage
	if ku&x509.KeyUsageDigitalSignature == 0 || ku&(x509.KeyUsageKeyEncipherment|x509.KeyUsageDataEncipherment) == 0 {
		return refuse(ua.StatusBadCertificateUseNotAllowed, "%q lacks the key usages digitalSignature and keyEncipherment or dataEncipherment", leaf.Subject)
	}
	if len(leaf.ExtKeyUsage) == 0 && len(leaf.UnknownExtKeyUsage) == 0 {
		return nil
	}
	for _, u := range leaf.ExtKeyUsage {
		if u == x509.ExtKeyUsageClientAuth || u == x509.ExtKeyUsageAny {
			return nil
		}
	}
	return refuse(ua.StatusBadCertificateUseNotAllowed, "%q lists extended key usages without clientAuth", leaf.Subject)
}

// checkRevocation looks each certificate of the chain up in the CRLs its
// issuer signed. A chain without CRLs is accepted.
func checkRevocation(chain []*x509.Certificate, crls []*x509.RevocationList) *ValidationError {
	for i := 0; i+1 < len(chain); i++ {
		c, issuer := chain[i], chain[i+1]
		for _, crl := range crls {
			if !bytes.Equal(crl.RawIssuer, issuer.RawSubject) || crl.CheckSignatureFrom(issuer) != nil {
				continue
			}
			for _, e := range crl.RevokedCertificateEntries {
				if e.SerialNumber.Cmp(c.SerialNumber) != 0 {
					continue
				}
				if i == 0 {
					return refuse(ua.StatusBadCertificateRevoked, "%q (serial %s) is revoked by a CRL of %q", c.Subject, c.SerialNumber, issuer.Subject)
				}
				return refuse(ua.StatusBadCertificateIssuerRevoked, "the issuer %q of %q is revoked by a CRL of %q", c.Subject, chain[0].Subject, issuer.Subject)
			}
		}
	}
	return nil
}

// refusal is a certificate refused for one reason, logged once.
type refusal struct {
	thumb [20]byte
	code  ua.StatusCode
}

// refused logs verr once per thumbprint and status code, and at most one
// line a minute per status code (that line counts the others), and
// returns it.
func (s *Store) refused(thumb [20]byte, verr *ValidationError) error {
	s.mu.Lock()
	k := refusal{thumb, verr.Code}
	first := !s.logged[k]
	if first {
		if len(s.logged) >= maxLogged {
			clear(s.logged)
		}
		s.logged[k] = true
	}
	s.mu.Unlock()
	if first {
		s.logs.Log(s.log, slog.LevelWarn, codeName(verr.Code), s.clock.Now(),
			"pki: client certificate refused", "status", codeName(verr.Code), "reason", verr.Reason, "thumbprint", thumbHex(thumb))
	}
	return verr
}

// writeCert writes c to dir as THUMBPRINT.der.
func (s *Store) writeCert(dir string, c *x509.Certificate) error {
	return writeFileAtomic(filepath.Join(s.dir, dir, certName(c)), c.Raw, 0o644)
}

// certName is the file name of c in a store directory.
func certName(c *x509.Certificate) string { return thumbHex(sha1.Sum(c.Raw)) + ".der" }

// parseCRL decodes a DER or PEM ("X509 CRL") revocation list.
func parseCRL(data []byte) (*x509.RevocationList, error) {
	if b, _ := pem.Decode(data); b != nil {
		data = b.Bytes
	}
	return x509.ParseRevocationList(data)
}

// ApplicationURIs are the URIs of c's SubjectAltName, where OPC UA puts the
// ApplicationUri.
func ApplicationURIs(c *x509.Certificate) []string {
	out := make([]string, 0, len(c.URIs))
	for _, u := range c.URIs {
		out = append(out, u.String())
	}
	return out
}
