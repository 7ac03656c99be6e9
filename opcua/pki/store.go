package pki

import (
	"crypto/sha1"
	"crypto/x509"
	"encoding/hex"
	"errors"
	"fmt"
	"hash/fnv"
	"log/slog"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/otopcua/otopcua/actors"
	"github.com/otopcua/otopcua/opcua/loglimit"
	"github.com/otopcua/otopcua/opcua/pki/certfile"
)

// The directories of a PKI store, relative to its root.
const (
	DirOwnCerts      = "own/certs"
	DirOwnPrivate    = "own/private"
	DirTrustedCerts  = "trusted/certs"
	DirTrustedCRL    = "trusted/crl"
	DirIssuersCerts  = "issuers/certs"
	DirIssuersCRL    = "issuers/crl"
	DirRejectedCerts = "rejected/certs"
)

var layout = []string{DirOwnCerts, DirOwnPrivate, DirTrustedCerts, DirTrustedCRL, DirIssuersCerts, DirIssuersCRL, DirRejectedCerts}

// watched are the directories whose content decides a validation.
var watched = []string{DirTrustedCerts, DirTrustedCRL, DirIssuersCerts, DirIssuersCRL}

// Defaults of Options.
const (
	DefaultValidity    = 5 * 365 * 24 * time.Hour
	DefaultMaxRejected = 1000
	// ReloadInterval is how often, at most, the trust lists are checked for
	// changes on disk.
	ReloadInterval = time.Second
)

// ErrUnknownThumbprint is returned by Trust, Reject and Remove when no
// certificate of the store has the thumbprint.
var ErrUnknownThumbprint = errors.New("no certificate with this thumbprint")

// Options configure a Store. The zero value is usable.
type Options struct {
	// Clock is the time source for validity checks, generated
	// certificates and the reload interval. Default the wall clock.
	Clock actors.Clock
	// AutoAcceptUntrusted copies an untrusted client certificate to
	// trusted/certs and accepts it (OpcUa:Security:AutoAcceptUntrusted, for
	// commissioning only). Default false.
	AutoAcceptUntrusted bool
	// Logger receives refusals (once per certificate) and warnings. Default
	// slog.Default().
	Logger *slog.Logger
	// Validity of a generated application instance certificate. Default
	// DefaultValidity (5 years).
	Validity time.Duration
	// MaxRejected bounds the files in rejected/certs: before a new one is
	// written the oldest are removed, so the directory never holds more
	// (files other processes add are seen within RejectedRescanInterval).
	// Default DefaultMaxRejected (1,000).
	MaxRejected int
}

// Store is a PKI directory. Its methods are safe for concurrent use.
type Store struct {
	dir         string
	clock       actors.Clock
	autoAccept  bool
	log         *slog.Logger
	validity    time.Duration
	maxRejected int

	// mu guards the fields below; it is never held during a signature
	// check of a cache hit, only while reading the snapshot.
	mu        sync.Mutex
	snap      *snapshot
	stamp     uint64    // fingerprint of the watched directories at the last load
	checkedAt time.Time // when stamp was last compared; zero forces a check
	logged    map[refusal]bool

	rejected *rejectedDir      // rejected/certs and its cap
	logs     *loglimit.Limiter // refusal warnings, per status
}

// Open opens (creating when missing) a PKI directory with the usual layout:
// own/certs, own/private, trusted/certs, trusted/crl, issuers/certs,
// issuers/crl, rejected/certs. own/private is created with mode 0700.
func Open(dir string, o Options) (*Store, error) {
	if dir == "" {
		return nil, errors.New("pki: the PKI directory is empty (OpcUa:Security:PkiDir)")
	}
	for _, d := range layout {
		mode := os.FileMode(0o755)
		if d == DirOwnPrivate {
			mode = 0o700
		}
		if err := os.MkdirAll(filepath.Join(dir, d), mode); err != nil {
			return nil, fmt.Errorf("pki: %w", err)
		}
	}
	s := &Store{dir: dir, clock: o.Clock, autoAccept: o.AutoAcceptUntrusted, log: o.Logger,
		validity: o.Validity, maxRejected: o.MaxRejected, logged: map[refusal]bool{}}
	if s.clock == nil {
		s.clock = actors.RealClock()
	}
	if s.log == nil {
		s.log = slog.Default()
	}
	if s.validity <= 0 {
		s.validity = DefaultValidity
	}
	if s.maxRejected <= 0 {
		s.maxRejected = DefaultMaxRejected
	}
	s.rejected = &rejectedDir{path: filepath.Join(dir, DirRejectedCerts), max: s.maxRejected}
	s.rejected.mu.Lock()
	s.rejected.scan(s.clock.Now(), s.warnEvict)
	s.rejected.mu.Unlock()
	s.logs = loglimit.New(loglimit.DefaultInterval, 0)
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.reloadLocked(); err != nil {
		return nil, err
	}
	return s, nil
}

// Dir is the root of the store.
func (s *Store) Dir() string { return s.dir }

// snapshot is the trust lists as read from disk at one moment. It is never
// modified after load.
type snapshot struct {
	trusted map[[20]byte]*x509.Certificate
	issuers []*x509.Certificate // trusted/certs and issuers/certs: chain candidates
	crls    []*x509.RevocationList
	// cache maps the SHA-1 of an accepted input to what remains to check
	// on the next call (time and URI). mu guards it.
	cache map[[20]byte]*accepted
}

// current returns the snapshot, re-reading the directories when their
// content changed and ReloadInterval has passed since the last check.
func (s *Store) current() *snapshot {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.clock.Now()
	if d := now.Sub(s.checkedAt); !s.checkedAt.IsZero() && d >= 0 && d < ReloadInterval {
		return s.snap
	}
	s.checkedAt = now
	if st, err := s.fingerprint(); err == nil && st == s.stamp {
		return s.snap
	}
	if err := s.reloadLocked(); err != nil {
		s.log.Warn("pki: reloading the trust lists failed; keeping the previous ones", "dir", s.dir, "err", err)
	}
	return s.snap
}

// invalidate makes the next validation re-read the directories.
func (s *Store) invalidate() {
	s.mu.Lock()
	s.checkedAt = time.Time{}
	s.stamp = 0
	s.mu.Unlock()
}

// fingerprint hashes the names, sizes and modification times of the
// watched directories' files. mu must be held.
func (s *Store) fingerprint() (uint64, error) {
	h := fnv.New64a()
	for _, d := range watched {
		entries, err := os.ReadDir(filepath.Join(s.dir, d))
		if err != nil {
			return 0, err
		}
		fmt.Fprintf(h, "%s\x00", d)
		for _, e := range entries {
			info, err := e.Info()
			if err != nil {
				continue
			}
			fmt.Fprintf(h, "%s\x00%d\x00%d\x00", e.Name(), info.Size(), info.ModTime().UnixNano())
		}
	}
	return h.Sum64(), nil
}

// reloadLocked reads the watched directories into a new snapshot. mu must
// be held.
func (s *Store) reloadLocked() error {
	st, err := s.fingerprint()
	if err != nil {
		return fmt.Errorf("pki: %w", err)
	}
	sn := &snapshot{trusted: map[[20]byte]*x509.Certificate{}, cache: map[[20]byte]*accepted{}}
	for _, f := range s.readCerts(DirTrustedCerts) {
		sn.trusted[f.thumb] = f.cert
		sn.issuers = append(sn.issuers, f.cert)
	}
	for _, f := range s.readCerts(DirIssuersCerts) {
		sn.issuers = append(sn.issuers, f.cert)
	}
	sn.crls = append(s.readCRLs(DirTrustedCRL), s.readCRLs(DirIssuersCRL)...)
	s.snap, s.stamp = sn, st
	return nil
}

// certFile is one certificate file of a store directory.
type certFile struct {
	path  string
	cert  *x509.Certificate
	thumb [20]byte
}

// readCerts parses every certificate file of dir (relative to the root).
// Unreadable files are logged and skipped.
func (s *Store) readCerts(dir string) []certFile {
	entries, err := os.ReadDir(filepath.Join(s.dir, dir))
	if err != nil {
		return nil
	}
	var out []certFile
	for _, e := range entries {
		if !e.Type().IsRegular() || strings.HasPrefix(e.Name(), ".") {
			continue
		}
		p := filepath.Join(s.dir, dir, e.Name())
		data, err := os.ReadFile(p)
		if err != nil {
			s.log.Warn("pki: cannot read a certificate file", "file", p, "err", err)
			continue
		}
		certs, err := certfile.ParseCertificates(data)
		if err != nil {
			s.log.Warn("pki: not a certificate; ignored", "file", p, "err", err)
			continue
		}
		out = append(out, certFile{path: p, cert: certs[0], thumb: sha1.Sum(certs[0].Raw)})
	}
	return out
}

// readCRLs parses every CRL file (DER or PEM "X509 CRL") of dir.
func (s *Store) readCRLs(dir string) []*x509.RevocationList {
	entries, err := os.ReadDir(filepath.Join(s.dir, dir))
	if err != nil {
		return nil
	}
	var out []*x509.RevocationList
	for _, e := range entries {
		if !e.Type().IsRegular() || strings.HasPrefix(e.Name(), ".") {
			continue
		}
		p := filepath.Join(s.dir, dir, e.Name())
		data, err := os.ReadFile(p)
		if err == nil {
			var crl *x509.RevocationList
			if crl, err = parseCRL(data); err == nil {
				out = append(out, crl)
				continue
			}
		}
		s.log.Warn("pki: not a certificate revocation list; ignored", "file", p, "err", err)
	}
	return out
}

// ParseThumbprint reads a thumbprint written as 40 hexadecimal digits, in
// either case, with optional ':' or ' ' separators.
func ParseThumbprint(s string) ([20]byte, error) {
	var t [20]byte
	clean := strings.NewReplacer(":", "", " ", "").Replace(strings.TrimSpace(s))
	b, err := hex.DecodeString(clean)
	if err != nil || len(b) != len(t) {
		return t, fmt.Errorf("pki: %q is not a thumbprint: accepted values are 40 hexadecimal digits (the SHA-1 of the certificate)", s)
	}
	copy(t[:], b)
	return t, nil
}

// thumbHex is the thumbprint as file names and the CLI show it.
func thumbHex(t [20]byte) string { return strings.ToUpper(hex.EncodeToString(t[:])) }

// sortByName orders files for a stable listing.
func sortByName(fs []certFile) {
	sort.Slice(fs, func(i, j int) bool { return fs[i].path < fs[j].path })
}
