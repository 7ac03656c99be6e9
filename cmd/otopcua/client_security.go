package main

import (
	"bytes"
	"crypto/rsa"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/gopcua/opcua/ua"
	"github.com/gopcua/opcua/uapolicy"
	"github.com/spf13/pflag"

	"github.com/otopcua/otopcua/opcua/client"
	"github.com/otopcua/otopcua/opcua/pki"
	"github.com/otopcua/otopcua/opcua/pki/certfile"
	"github.com/otopcua/otopcua/opcua/uaserver"
)

// securityFlags are the secure-channel flags of "otopcua client".
type securityFlags struct {
	security    string // Policy:Mode, or "none"
	cert, key   string // the client's certificate and key files
	trustServer bool   // accept the certificate each endpoint presents
	trustDir    string // directory of trusted server certificates
	environ     []string
	stderr      io.Writer
}

func addSecurityFlags(f *pflag.FlagSet, s *securityFlags, environ []string, stderr io.Writer) {
	s.environ, s.stderr = environ, stderr
	f.StringVar(&s.security, "security", "none", `Policy:Mode of the endpoints to use: none, Basic256Sha256, Aes128_Sha256_RsaOaep or Aes256_Sha256_RsaPss with Sign or SignAndEncrypt, e.g. Basic256Sha256:SignAndEncrypt`)
	f.StringVar(&s.cert, "cert", "", "the client's application instance certificate (DER or PEM, RSA 2048+); default: one generated in the user cache directory")
	f.StringVar(&s.key, "key", "", "the private key of --cert (PEM or DER)")
	f.BoolVar(&s.trustServer, "trust-server", false, "trust the certificate each server's endpoint presents (its thumbprint is printed once)")
	f.StringVar(&s.trustDir, "trust-dir", "", "directory of trusted server certificates (DER or PEM files)")
}

// clientApplicationURI is the ApplicationUri of a generated client
// certificate.
func clientApplicationURI() string {
	host, err := os.Hostname()
	if err != nil || host == "" {
		host = "localhost"
	}
	return "urn:" + host + ":otopcua:client"
}

// options checks the flags and returns the client's Security (nil for
// security None).
func (s *securityFlags) options() (*client.Security, error) {
	if strings.EqualFold(s.security, "none") || s.security == "None:None" {
		if s.cert != "" || s.key != "" || s.trustServer || s.trustDir != "" {
			return nil, usageErr("--cert, --key, --trust-server and --trust-dir need a secured --security, e.g. Basic256Sha256:SignAndEncrypt")
		}
		return nil, nil
	}
	e, err := uaserver.ParseEndpoint(s.security)
	if err != nil || e.PolicyURI == ua.SecurityPolicyURINone {
		return nil, usageErr("--security %q: accepted values are none or Policy:Mode with Policy one of Basic256Sha256, Aes128_Sha256_RsaOaep, Aes256_Sha256_RsaPss and Mode Sign or SignAndEncrypt", s.security)
	}
	if (s.cert == "") != (s.key == "") {
		return nil, usageErr("--cert and --key are given together or not at all")
	}
	if !s.trustServer && s.trustDir == "" {
		return nil, usageErr("--security %s needs --trust-server or --trust-dir DIR to decide which server certificates to trust", s.security)
	}
	cert, key, err := s.identity()
	if err != nil {
		return nil, failure(err)
	}
	trust, err := s.trustFunc()
	if err != nil {
		return nil, failure(err)
	}
	return &client.Security{PolicyURI: e.PolicyURI, Mode: e.Mode, Certificate: cert, PrivateKey: key, TrustServer: trust}, nil
}

// identity loads --cert and --key, or the generated certificate of the
// user cache directory (made on first use).
func (s *securityFlags) identity() ([]byte, *rsa.PrivateKey, error) {
	if s.cert != "" {
		chain, key, err := certfile.LoadKeyPair(s.cert, s.key)
		if err != nil {
			return nil, nil, fmt.Errorf("--cert %s --key %s: %w", s.cert, s.key, err)
		}
		return chain[0].Raw, key, nil
	}
	dir, err := s.cacheDir()
	if err != nil {
		return nil, nil, err
	}
	st, err := pki.Open(dir, pki.Options{})
	if err != nil {
		return nil, nil, err
	}
	host, _ := os.Hostname()
	id, err := st.ApplicationIdentity(clientApplicationURI(), []string{host}, "", "")
	if err != nil {
		return nil, nil, fmt.Errorf("the client certificate in %s: %w", dir, err)
	}
	fmt.Fprintf(s.stderr, "client certificate %s (thumbprint %X); trust it on the servers with: otopcua pki trust %X --config …\n",
		filepath.Join(dir, pki.OwnCertFile), id.Thumbprint, id.Thumbprint)
	return id.Certificate, id.Key, nil
}

// cacheDir is where the generated client certificate lives:
// $XDG_CACHE_HOME/otopcua/client-pki or the platform's user cache directory.
func (s *securityFlags) cacheDir() (string, error) {
	for _, kv := range s.environ {
		if v, ok := strings.CutPrefix(kv, "XDG_CACHE_HOME="); ok && v != "" {
			return filepath.Join(v, "otopcua", "client-pki"), nil
		}
	}
	d, err := os.UserCacheDir()
	if err != nil {
		return "", fmt.Errorf("no user cache directory for a generated client certificate (%v); give --cert and --key", err)
	}
	return filepath.Join(d, "otopcua", "client-pki"), nil
}

// trustFunc is the client's server-certificate check: --trust-dir's
// certificates, then --trust-server.
func (s *securityFlags) trustFunc() (func(url string, der []byte) error, error) {
	var trusted [][]byte
	if s.trustDir != "" {
		var err error
		if trusted, err = loadCertDir(s.trustDir); err != nil {
			return nil, err
		}
	}
	var mu sync.Mutex
	printed := map[string]bool{}
	return func(url string, der []byte) error {
		leaf, err := uapolicy.ParseCertificate(der)
		if err != nil {
			return fmt.Errorf("the certificate of %s: %w", url, err)
		}
		thumb := fmt.Sprintf("%X", uapolicy.Thumbprint(leaf.Raw))
		for _, t := range trusted {
			if bytes.Equal(t, leaf.Raw) {
				return nil
			}
		}
		if !s.trustServer {
			return fmt.Errorf("the certificate of %s (thumbprint %s) is not in --trust-dir %s; copy it there or pass --trust-server", url, thumb, s.trustDir)
		}
		mu.Lock()
		defer mu.Unlock()
		if !printed[thumb] {
			printed[thumb] = true
			fmt.Fprintf(s.stderr, "trusting the certificate of %s: thumbprint %s (--trust-server)\n", url, thumb)
		}
		return nil
	}, nil
}

// loadCertDir reads every certificate file (DER or PEM) of dir; files
// that hold no certificate are an error naming them.
func loadCertDir(dir string) ([][]byte, error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("--trust-dir: %w", err)
	}
	var out [][]byte
	for _, e := range ents {
		if e.IsDir() {
			continue
		}
		p := filepath.Join(dir, e.Name())
		b, err := os.ReadFile(p)
		if err != nil {
			return nil, fmt.Errorf("--trust-dir: %w", err)
		}
		certs, err := certfile.ParseCertificates(b)
		if err != nil {
			return nil, fmt.Errorf("--trust-dir: %s: %w", p, err)
		}
		out = append(out, certs[0].Raw)
	}
	if len(out) == 0 {
		return nil, errors.New("--trust-dir " + dir + ": no certificate files")
	}
	return out, nil
}
