package pki

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/hkdf"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha1"
	"crypto/sha256"
	"crypto/x509"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/otopcua/otopcua/opcua/pki/certfile"
)

// The shared identity: one application identity that every member of a
// ClusterId presents on its floating address, so that a client trusts it
// once and sees the same certificate after a failover. `otopcua pki
// floating` provisions it once and stores it in the Config DB with its key
// sealed (SealKey); an operator may instead place the pair in each node's
// PKI directory (SharedCertFile, SharedKeyFile), which then wins.
const (
	SharedCertFile = "own/floating/certs/floating.der"
	SharedKeyFile  = "own/floating/private/floating.pem"
)

// ErrNoClusterSecret is returned by SealKey and OpenKey without a secret.
var ErrNoClusterSecret = errors.New("pki: Cluster:Secret is not set: the floating identity's private key is stored sealed with a key derived from Cluster:Secret, and is neither stored nor loaded without one; set Cluster:Secret, the same on every member of the ClusterId")

// ErrSealedKey is returned by OpenKey when the sealed key does not open:
// another Cluster:Secret sealed it, or it was altered or belongs to another
// cluster or certificate.
var ErrSealedKey = errors.New("pki: the floating identity's sealed private key does not open with this node's Cluster:Secret (another secret sealed it, or it belongs to another ClusterId or certificate); provision it again with otopcua pki floating --force")

// NewSharedIdentity generates a shared identity in memory: an RSA 2048 key
// and a self-signed SHA-256 certificate for appURI whose SubjectAltName
// also lists hosts (IP addresses and DNS names), valid from an hour before
// now for validity (0: DefaultValidity).
func NewSharedIdentity(appURI string, hosts []string, now time.Time, validity time.Duration) (*Identity, error) {
	u, err := url.Parse(appURI)
	if err != nil || appURI == "" || u.Scheme == "" {
		return nil, fmt.Errorf("pki: Redundancy:FloatingAddress:ApplicationUri %q cannot go into a certificate: accepted values are absolute URIs such as urn:otopcua:floating:plant-a", appURI)
	}
	if validity <= 0 {
		validity = DefaultValidity
	}
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return nil, fmt.Errorf("pki: %w", err)
	}
	tmpl, err := certTemplate(u, hosts, key, now, validity, "otopcua-floating")
	if err != nil {
		return nil, err
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, fmt.Errorf("pki: %w", err)
	}
	return &Identity{Certificate: der, Chain: [][]byte{der}, Key: key, Thumbprint: sha1.Sum(der)}, nil
}

// SharedIdentity loads the shared identity an operator placed in the
// store's directory (SharedCertFile and SharedKeyFile). It returns nil and
// no error when neither file exists; a certificate without its key, a key
// that is not the certificate's, or a certificate for another ApplicationUri
// than appURI is an error.
func (s *Store) SharedIdentity(appURI string) (*Identity, error) {
	cp, kp := filepath.Join(s.dir, SharedCertFile), filepath.Join(s.dir, SharedKeyFile)
	_, cerr := os.Stat(cp)
	_, kerr := os.Stat(kp)
	switch {
	case errors.Is(cerr, os.ErrNotExist) && errors.Is(kerr, os.ErrNotExist):
		return nil, nil
	case cerr != nil || kerr != nil:
		return nil, fmt.Errorf("pki: the floating identity needs both %s and %s: %w", cp, kp, errors.Join(cerr, kerr))
	}
	chain, key, err := certfile.LoadKeyPair(cp, kp)
	if err != nil {
		return nil, fmt.Errorf("pki: floating identity: %w", err)
	}
	if uris := ApplicationURIs(chain[0]); !slices.Contains(uris, appURI) {
		return nil, fmt.Errorf("pki: %s has ApplicationUri %q but Redundancy:FloatingAddress:ApplicationUri is %q: %w", cp, uris, appURI, ErrApplicationURIMismatch)
	}
	id := &Identity{Certificate: chain[0].Raw, Key: key, Thumbprint: sha1.Sum(chain[0].Raw)}
	for _, c := range chain {
		id.Chain = append(id.Chain, c.Raw)
	}
	return id, nil
}

// sealVersion prefixes a sealed key: the format below, version 1.
const sealVersion = 1

const (
	sealSaltLen  = 16
	sealNonceLen = 12
	sealInfo     = "otopcua floating identity key v1"
)

// SealKey encrypts key for the Config DB: AES-256-GCM under a key derived
// by HKDF-SHA256 from secret (Cluster:Secret) with a random salt, the
// additional data binding it to clusterID and the certificate cert (so a
// sealed key moved to another cluster's row or beside another certificate
// does not open). The result is version, salt, nonce and ciphertext.
func SealKey(key *rsa.PrivateKey, secret, clusterID string, cert []byte) ([]byte, error) {
	if secret == "" {
		return nil, ErrNoClusterSecret
	}
	salt := make([]byte, sealSaltLen)
	nonce := make([]byte, sealNonceLen)
	if _, err := rand.Read(salt); err != nil {
		return nil, fmt.Errorf("pki: %w", err)
	}
	if _, err := rand.Read(nonce); err != nil {
		return nil, fmt.Errorf("pki: %w", err)
	}
	aead, err := sealAEAD(secret, salt)
	if err != nil {
		return nil, err
	}
	out := append([]byte{sealVersion}, salt...)
	out = append(out, nonce...)
	return aead.Seal(out, nonce, x509.MarshalPKCS1PrivateKey(key), sealAD(clusterID, cert)), nil
}

// OpenKey reverses SealKey: the private key of cert, sealed for clusterID
// with secret. It fails with ErrNoClusterSecret without a secret and
// ErrSealedKey when the sealed bytes do not open or hold another key.
func OpenKey(sealed []byte, secret, clusterID string, cert []byte) (*rsa.PrivateKey, error) {
	if secret == "" {
		return nil, ErrNoClusterSecret
	}
	if len(sealed) < 1+sealSaltLen+sealNonceLen || sealed[0] != sealVersion {
		return nil, ErrSealedKey
	}
	salt, nonce, ct := sealed[1:1+sealSaltLen], sealed[1+sealSaltLen:1+sealSaltLen+sealNonceLen], sealed[1+sealSaltLen+sealNonceLen:]
	aead, err := sealAEAD(secret, salt)
	if err != nil {
		return nil, err
	}
	plain, err := aead.Open(nil, nonce, ct, sealAD(clusterID, cert))
	if err != nil {
		return nil, ErrSealedKey
	}
	key, err := x509.ParsePKCS1PrivateKey(plain)
	if err != nil {
		return nil, ErrSealedKey
	}
	c, err := x509.ParseCertificate(cert)
	if err != nil {
		return nil, fmt.Errorf("pki: floating identity certificate: %w", err)
	}
	if err := certfile.CheckPair(c, key); err != nil {
		return nil, ErrSealedKey
	}
	return key, nil
}

func sealAEAD(secret string, salt []byte) (cipher.AEAD, error) {
	k, err := hkdf.Key(sha256.New, []byte(secret), salt, sealInfo, 32)
	if err != nil {
		return nil, fmt.Errorf("pki: %w", err)
	}
	block, err := aes.NewCipher(k)
	if err != nil {
		return nil, fmt.Errorf("pki: %w", err)
	}
	return cipher.NewGCM(block)
}

// sealAD is the additional data of a sealed key: the cluster id and the
// SHA-256 of the certificate, length-prefixed.
func sealAD(clusterID string, cert []byte) []byte {
	h := sha256.Sum256(cert)
	ad := []byte{byte(len(clusterID) >> 8), byte(len(clusterID))}
	ad = append(ad, clusterID...)
	return append(ad, h[:]...)
}
