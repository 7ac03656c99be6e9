package pki

import (
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha1"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/otopcua/otopcua/opcua/pki/certfile"
)

// The files of a generated application instance certificate.
const (
	OwnCertFile = "own/certs/otopcua.der"
	OwnKeyFile  = "own/private/otopcua.pem"
)

// ErrApplicationURIMismatch is returned by ApplicationIdentity when the
// stored certificate was made for another ApplicationUri.
var ErrApplicationURIMismatch = errors.New("the application instance certificate is for another ApplicationUri")

// Identity is the server's application instance certificate.
type Identity struct {
	Certificate []byte   // DER of the leaf
	Chain       [][]byte // DER, leaf first (the leaf alone when self-signed)
	Key         *rsa.PrivateKey
	Thumbprint  [20]byte // SHA-1 of the leaf
}

// ApplicationIdentity returns the server's certificate and key. With
// certFile and keyFile (OpcUa:Security:CertificateFile and KeyFile) it
// loads those; otherwise it loads own/ and, only when own/ holds none,
// generates a self-signed RSA 2048 / SHA-256 certificate for appURI and
// hosts (DNS names and IP addresses) and stores it there.
//
// An existing certificate is never replaced: not on a restart and not when
// hosts differ (a container's new host name keeps the thumbprint clients
// trust). When its ApplicationUri is not appURI the error wraps
// ErrApplicationURIMismatch and names both; the operator removes own/ (or
// fixes OpcUa:ApplicationUri) deliberately.
func (s *Store) ApplicationIdentity(appURI string, hosts []string, certFile, keyFile string) (*Identity, error) {
	if (certFile == "") != (keyFile == "") {
		return nil, errors.New("pki: OpcUa:Security:CertificateFile and OpcUa:Security:KeyFile are given together or not at all")
	}
	if certFile != "" {
		chain, key, err := certfile.LoadKeyPair(certFile, keyFile)
		if err != nil {
			return nil, fmt.Errorf("pki: OpcUa:Security:CertificateFile %s: %w", certFile, err)
		}
		return identityOf(chain, key, certFile, appURI)
	}
	cp, kp := filepath.Join(s.dir, OwnCertFile), filepath.Join(s.dir, OwnKeyFile)
	_, cerr := os.Stat(cp)
	_, kerr := os.Stat(kp)
	switch {
	case cerr == nil && kerr == nil:
		chain, key, err := certfile.LoadKeyPair(cp, kp)
		if err != nil {
			return nil, fmt.Errorf("pki: %w", err)
		}
		return identityOf(chain, key, cp, appURI)
	case cerr == nil:
		return nil, fmt.Errorf("pki: %s exists but its private key %s is missing; restore the key or remove the certificate to generate a new one (clients will have to trust it again)", cp, kp)
	case !errors.Is(cerr, os.ErrNotExist):
		return nil, fmt.Errorf("pki: %w", cerr)
	}
	if kerr == nil {
		s.log.Warn("pki: a private key without its certificate was found (an interrupted generation?); generating a new pair", "key", kp)
	}
	return s.generate(appURI, hosts, cp, kp)
}

func identityOf(chain []*x509.Certificate, key *rsa.PrivateKey, file, appURI string) (*Identity, error) {
	leaf := chain[0]
	uris := ApplicationURIs(leaf)
	if !slices.Contains(uris, appURI) {
		return nil, fmt.Errorf("pki: %s has ApplicationUri %q but OpcUa:ApplicationUri is %q: %w; fix OpcUa:ApplicationUri, or remove the certificate to generate a new one (clients will have to trust it again)",
			file, uris, appURI, ErrApplicationURIMismatch)
	}
	id := &Identity{Certificate: leaf.Raw, Key: key, Thumbprint: sha1.Sum(leaf.Raw)}
	for _, c := range chain {
		id.Chain = append(id.Chain, c.Raw)
	}
	return id, nil
}

// generate makes and stores a self-signed certificate: key first, then the
// certificate, each written atomically, so that the certificate exists only
// with its key.
func (s *Store) generate(appURI string, hosts []string, cp, kp string) (*Identity, error) {
	u, err := url.Parse(appURI)
	if err != nil || appURI == "" {
		return nil, fmt.Errorf("pki: OpcUa:ApplicationUri %q cannot go into a certificate: accepted values are absolute URIs such as urn:node-a:otopcua", appURI)
	}
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return nil, fmt.Errorf("pki: %w", err)
	}
	tmpl, err := s.template(u, hosts, key)
	if err != nil {
		return nil, err
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, fmt.Errorf("pki: %w", err)
	}
	kpem := pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(key)})
	if err := writeFileAtomic(kp, kpem, 0o600); err != nil {
		return nil, fmt.Errorf("pki: %w", err)
	}
	if err := writeFileAtomic(cp, der, 0o644); err != nil {
		return nil, fmt.Errorf("pki: %w", err)
	}
	t := sha1.Sum(der)
	s.log.Info("pki: generated the application instance certificate", "file", cp, "applicationUri", appURI, "hosts", hosts, "thumbprint", thumbHex(t))
	return &Identity{Certificate: der, Chain: [][]byte{der}, Key: key, Thumbprint: t}, nil
}

// template is the certificate OPC UA Part 6 §6.2.2 describes for a
// self-signed application instance certificate.
func (s *Store) template(appURI *url.URL, hosts []string, key *rsa.PrivateKey) (*x509.Certificate, error) {
	return certTemplate(appURI, hosts, key, s.clock.Now(), s.validity, "otopcua")
}

// certTemplate is template's certificate valid from now (less an hour) for
// validity, its common name cn@ the first host.
func certTemplate(appURI *url.URL, hosts []string, key *rsa.PrivateKey, now time.Time, validity time.Duration, cn string) (*x509.Certificate, error) {
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		return nil, fmt.Errorf("pki: %w", err)
	}
	skid := sha1.Sum(x509.MarshalPKCS1PublicKey(&key.PublicKey))
	var dns []string
	var ips []net.IP
	for _, h := range hosts {
		if ip := net.ParseIP(h); ip != nil {
			if !ip.IsUnspecified() && !slices.ContainsFunc(ips, ip.Equal) {
				ips = append(ips, ip)
			}
		} else if h != "" && !slices.Contains(dns, h) {
			dns = append(dns, h)
		}
	}
	if len(dns) > 0 {
		cn += "@" + dns[0]
	} else if len(ips) > 0 {
		cn += "@" + ips[0].String()
	}
	return &x509.Certificate{
		SerialNumber:          serial,
		Subject:               pkix.Name{CommonName: cn, Organization: []string{"otopcua"}},
		NotBefore:             now.Add(-time.Hour), // tolerate a client clock slightly behind
		NotAfter:              now.Add(validity),
		KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageContentCommitment | x509.KeyUsageKeyEncipherment | x509.KeyUsageDataEncipherment | x509.KeyUsageCertSign,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
		BasicConstraintsValid: true,
		SubjectKeyId:          skid[:],
		AuthorityKeyId:        skid[:],
		URIs:                  []*url.URL{appURI},
		DNSNames:              dns,
		IPAddresses:           ips,
		SignatureAlgorithm:    x509.SHA256WithRSA,
	}, nil
}
