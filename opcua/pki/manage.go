package pki

import (
	"fmt"
	"os"
	"path/filepath"
	"time"
)

// Entry is one certificate of the store, as `otopcua pki list` shows it.
type Entry struct {
	// Dir is where it lives: "own", "trusted", "issuers" or "rejected".
	Dir string
	// File is its path.
	File           string
	Subject        string
	ApplicationURI string // the first SubjectAltName URI, "" when none
	Thumbprint     string // SHA-1, 40 upper-case hexadecimal digits
	NotBefore      time.Time
	NotAfter       time.Time
}

var listed = []struct{ name, dir string }{
	{"own", DirOwnCerts}, {"trusted", DirTrustedCerts}, {"issuers", DirIssuersCerts}, {"rejected", DirRejectedCerts},
}

// List returns every certificate of own, trusted, issuers and rejected, in
// that order, each directory sorted by file name.
func (s *Store) List() []Entry {
	var out []Entry
	for _, l := range listed {
		fs := s.readCerts(l.dir)
		sortByName(fs)
		for _, f := range fs {
			e := Entry{Dir: l.name, File: f.path, Subject: f.cert.Subject.String(), Thumbprint: thumbHex(f.thumb),
				NotBefore: f.cert.NotBefore, NotAfter: f.cert.NotAfter}
			if u := ApplicationURIs(f.cert); len(u) > 0 {
				e.ApplicationURI = u[0]
			}
			out = append(out, e)
		}
	}
	return out
}

// Trust moves the certificate with thumbprint (see ParseThumbprint) from
// rejected/certs to trusted/certs. It takes effect for Validate at once in
// this process and within ReloadInterval in a running node. A thumbprint
// already trusted is not an error.
func (s *Store) Trust(thumbprint string) error {
	return s.move(thumbprint, DirRejectedCerts, DirTrustedCerts)
}

// Reject moves the certificate with thumbprint from trusted/certs to
// rejected/certs. A thumbprint already rejected is not an error.
func (s *Store) Reject(thumbprint string) error {
	return s.move(thumbprint, DirTrustedCerts, DirRejectedCerts)
}

// Remove deletes the certificate with thumbprint from trusted, issuers and
// rejected. The own certificate is never removed.
func (s *Store) Remove(thumbprint string) error {
	t, err := ParseThumbprint(thumbprint)
	if err != nil {
		return err
	}
	found := false
	for _, d := range []string{DirTrustedCerts, DirIssuersCerts, DirRejectedCerts} {
		for _, f := range s.find(d, t) {
			if err := os.Remove(f.path); err != nil {
				return fmt.Errorf("pki: %w", err)
			}
			if d == DirRejectedCerts {
				s.rejected.dropped(filepath.Base(f.path))
			}
			found = true
		}
	}
	s.invalidate()
	if !found {
		return fmt.Errorf("pki: %s: %w in trusted, issuers or rejected", thumbHex(t), ErrUnknownThumbprint)
	}
	return nil
}

func (s *Store) move(thumbprint, from, to string) error {
	t, err := ParseThumbprint(thumbprint)
	if err != nil {
		return err
	}
	src := s.find(from, t)
	if len(src) == 0 {
		if len(s.find(to, t)) > 0 {
			return nil
		}
		return fmt.Errorf("pki: %s: %w in %s", thumbHex(t), ErrUnknownThumbprint, from)
	}
	if to == DirRejectedCerts {
		s.storeRejected(src[0].cert)
	} else if err := s.writeCert(to, src[0].cert); err != nil {
		return fmt.Errorf("pki: %w", err)
	}
	for _, f := range src {
		if err := os.Remove(f.path); err != nil {
			return fmt.Errorf("pki: %w", err)
		}
		if from == DirRejectedCerts {
			s.rejected.dropped(filepath.Base(f.path))
		}
	}
	s.invalidate()
	return nil
}

// find returns the files of dir whose certificate has thumbprint t.
func (s *Store) find(dir string, t [20]byte) []certFile {
	var out []certFile
	for _, f := range s.readCerts(dir) {
		if f.thumb == t {
			out = append(out, f)
		}
	}
	return out
}

// writeFileAtomic writes data to a temporary file beside path and renames
// it, so that a reader never sees half a certificate.
func writeFileAtomic(path string, data []byte, mode os.FileMode) error {
	dir, base := filepath.Split(path)
	f, err := os.CreateTemp(dir, "."+base+".tmp*")
	if err != nil {
		return err
	}
	tmp := f.Name()
	_, werr := f.Write(data)
	if err := f.Chmod(mode); werr == nil {
		werr = err
	}
	if err := f.Close(); werr == nil {
		werr = err
	}
	if werr == nil {
		werr = os.Rename(tmp, path)
	}
	if werr != nil {
		os.Remove(tmp)
	}
	return werr
}
