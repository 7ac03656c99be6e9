// Package certfile reads certificate and private key files in the forms an
// OT engineer is handed them: DER (.der, .cer) or PEM (.pem, .crt), one
// certificate or a chain, and RSA keys as PKCS #1 or PKCS #8 PEM or DER. It
// imports only the standard library so that config validation can use it.
package certfile

import (
	"bytes"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"os"
)

// MinRSABits is the smallest RSA key accepted for an application instance
// certificate.
const MinRSABits = 2048

// ParseCertificates decodes DER (one certificate or several concatenated) or
// PEM ("CERTIFICATE" blocks; other blocks are ignored). The first
// certificate is the leaf.
func ParseCertificates(data []byte) ([]*x509.Certificate, error) {
	if len(bytes.TrimSpace(data)) == 0 {
		return nil, errors.New("no certificate: the data is empty")
	}
	if !bytes.Contains(data, []byte("-----BEGIN")) {
		certs, err := x509.ParseCertificates(data)
		if err != nil {
			return nil, err
		}
		if len(certs) == 0 {
			return nil, errors.New("no certificate in the DER data")
		}
		return certs, nil
	}
	var certs []*x509.Certificate
	for rest := data; ; {
		var b *pem.Block
		b, rest = pem.Decode(rest)
		if b == nil {
			break
		}
		if b.Type != "CERTIFICATE" {
			continue
		}
		c, err := x509.ParseCertificate(b.Bytes)
		if err != nil {
			return nil, err
		}
		certs = append(certs, c)
	}
	if len(certs) == 0 {
		return nil, errors.New("no CERTIFICATE block in the PEM data")
	}
	return certs, nil
}

// ParseRSAKey decodes an RSA private key: PEM ("RSA PRIVATE KEY" or
// "PRIVATE KEY") or DER, PKCS #1 or PKCS #8.
func ParseRSAKey(data []byte) (*rsa.PrivateKey, error) {
	der := data
	if b, _ := pem.Decode(data); b != nil {
		der = b.Bytes
	}
	if k, err := x509.ParsePKCS1PrivateKey(der); err == nil {
		return k, nil
	}
	k, err := x509.ParsePKCS8PrivateKey(der)
	if err != nil {
		return nil, errors.New("not an RSA private key (PKCS #1 or PKCS #8, PEM or DER)")
	}
	rk, ok := k.(*rsa.PrivateKey)
	if !ok {
		return nil, fmt.Errorf("the private key is %T; only RSA keys are accepted", k)
	}
	return rk, nil
}

// LoadKeyPair reads certFile (its first certificate is the leaf, any others
// its issuers) and keyFile, and checks that the key is RSA with at least
// MinRSABits bits and belongs to the leaf.
func LoadKeyPair(certFile, keyFile string) ([]*x509.Certificate, *rsa.PrivateKey, error) {
	cdata, err := os.ReadFile(certFile)
	if err != nil {
		return nil, nil, err
	}
	chain, err := ParseCertificates(cdata)
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", certFile, err)
	}
	kdata, err := os.ReadFile(keyFile)
	if err != nil {
		return nil, nil, err
	}
	key, err := ParseRSAKey(kdata)
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", keyFile, err)
	}
	if err := CheckPair(chain[0], key); err != nil {
		return nil, nil, err
	}
	return chain, key, nil
}

// CheckPair checks that key is the private key of cert and is at least
// MinRSABits long.
func CheckPair(cert *x509.Certificate, key *rsa.PrivateKey) error {
	pub, ok := cert.PublicKey.(*rsa.PublicKey)
	if !ok {
		return fmt.Errorf("the certificate's key is %T; only RSA is accepted", cert.PublicKey)
	}
	if bits := pub.N.BitLen(); bits < MinRSABits {
		return fmt.Errorf("the RSA key has %d bits; at least %d are required", bits, MinRSABits)
	}
	if !pub.Equal(&key.PublicKey) {
		return errors.New("the private key does not belong to the certificate")
	}
	return nil
}
