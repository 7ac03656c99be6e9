package floating

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
)

// FileFence is the last ownership epoch an executor applied, persisted in
// one file so that a restart cannot apply an older plan. Safe for
// concurrent use (mu).
type FileFence struct {
	path string
	mu   sync.Mutex
	last uint64
}

// OpenFileFence reads the fence at path (a missing file is epoch 0).
func OpenFileFence(path string) (*FileFence, error) {
	f := &FileFence{path: path}
	b, err := os.ReadFile(path)
	switch {
	case os.IsNotExist(err):
		return f, nil
	case err != nil:
		return nil, fmt.Errorf("floating: read epoch fence: %w", err)
	}
	n, err := strconv.ParseUint(strings.TrimSpace(string(b)), 10, 64)
	if err != nil {
		return nil, fmt.Errorf("floating: epoch fence %s holds %q, not an epoch: %w", path, b, err)
	}
	f.last = n
	return f, nil
}

// Last is the last epoch admitted.
func (f *FileFence) Last() uint64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.last
}

// Admit records epoch when it is not older than the last admitted one and
// persists it (write to a temporary file, fsync, rename) before it
// returns; an older epoch returns a *StaleEpochError and changes nothing.
func (f *FileFence) Admit(epoch uint64) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if epoch < f.last {
		return &StaleEpochError{Plan: epoch, Last: f.last}
	}
	if epoch == f.last && f.last != 0 {
		return nil
	}
	if err := writeAtomic(f.path, []byte(strconv.FormatUint(epoch, 10)+"\n")); err != nil {
		return fmt.Errorf("floating: persist epoch fence: %w", err)
	}
	f.last = epoch
	return nil
}

func writeAtomic(path string, b []byte) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), ".fence-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(b); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}
