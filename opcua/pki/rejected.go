package pki

import (
	"crypto/x509"
	"errors"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"
)

// RejectedRescanInterval is how often, at most, rejected/certs is listed
// again to learn of files another process (the CLI, an operator) added or
// removed; between listings the store's own index decides.
const RejectedRescanInterval = time.Minute

// rejectedDir keeps rejected/certs within its cap without listing it on
// every write: an index of its files, oldest first, loaded at Open and
// re-read at most once per RejectedRescanInterval. A write evicts the
// oldest files before it adds one, all under mu, so the directory never
// holds more than max files (its temporary file included), whatever the
// number of concurrent writers.
type rejectedDir struct {
	path string
	max  int

	mu        sync.Mutex
	names     map[string]bool // files of the directory; mu must be held.
	order     []string        // names, oldest first (stale entries skipped); mu must be held.
	scannedAt time.Time       // last listing; mu must be held.
}

// scan lists the directory into the index, dropping the oldest files
// beyond max. mu must be held.
func (r *rejectedDir) scan(now time.Time, warn func(name string, err error)) {
	r.scannedAt = now
	entries, err := os.ReadDir(r.path)
	if err != nil {
		return
	}
	type file struct {
		name string
		mod  time.Time
	}
	files := make([]file, 0, len(entries))
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), ".") {
			continue
		}
		if info, err := e.Info(); err == nil && info.Mode().IsRegular() {
			files = append(files, file{e.Name(), info.ModTime()})
		}
	}
	sort.Slice(files, func(i, j int) bool {
		if !files[i].mod.Equal(files[j].mod) {
			return files[i].mod.Before(files[j].mod)
		}
		return files[i].name < files[j].name
	})
	r.names = make(map[string]bool, len(files))
	r.order = r.order[:0]
	for _, f := range files {
		r.names[f.name] = true
		r.order = append(r.order, f.name)
	}
	r.evict(r.max, warn)
}

// evict removes the oldest files until at most keep remain. mu must be
// held.
func (r *rejectedDir) evict(keep int, warn func(name string, err error)) {
	for len(r.names) > keep && len(r.order) > 0 {
		name := r.order[0]
		r.order = r.order[1:]
		if !r.names[name] {
			continue
		}
		delete(r.names, name)
		if err := os.Remove(filepath.Join(r.path, name)); err != nil && !errors.Is(err, os.ErrNotExist) {
			warn(name, err)
		}
	}
}

// dropped tells the index that name left the directory (Trust, Remove).
func (r *rejectedDir) dropped(name string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.names, name)
}

// count is the number of files the index holds.
func (r *rejectedDir) count() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.names)
}

// storeRejected writes c to rejected/certs as THUMBPRINT.der (once),
// first evicting the oldest files so that the directory stays within
// MaxRejected.
func (s *Store) storeRejected(c *x509.Certificate) {
	r := s.rejected
	name := certName(c)
	r.mu.Lock()
	defer r.mu.Unlock()
	if now := s.clock.Now(); r.names == nil || now.Sub(r.scannedAt) >= RejectedRescanInterval || now.Before(r.scannedAt) {
		r.scan(now, s.warnEvict)
	}
	if r.names[name] {
		return
	}
	r.evict(r.max-1, s.warnEvict)
	p := filepath.Join(r.path, name)
	if err := writeFileAtomic(p, c.Raw, 0o644); err != nil {
		s.log.Error("pki: cannot store a rejected certificate", "file", p, "err", err)
		return
	}
	r.names[name] = true
	r.order = append(r.order, name)
}

func (s *Store) warnEvict(name string, err error) {
	s.log.Warn("pki: cannot drop an old rejected certificate", "file", name, "err", err)
}
