package floating

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

func TestFileFenceRefusesOlderEpochsAcrossRestarts(t *testing.T) {
	path := filepath.Join(t.TempDir(), "epoch")
	f, err := OpenFileFence(path)
	if err != nil {
		t.Fatal(err)
	}
	if f.Last() != 0 {
		t.Fatalf("new fence at %d", f.Last())
	}
	for _, e := range []uint64{3, 3, 7} {
		if err := f.Admit(e); err != nil {
			t.Fatalf("admit %d: %v", e, err)
		}
	}
	err = f.Admit(6)
	var se *StaleEpochError
	if !errors.Is(err, ErrStaleEpoch) || !errors.As(err, &se) || se.Plan != 6 || se.Last != 7 {
		t.Fatalf("admit 6 after 7: %v", err)
	}
	g, err := OpenFileFence(path)
	if err != nil {
		t.Fatal(err)
	}
	if g.Last() != 7 {
		t.Fatalf("reopened fence at %d, want 7", g.Last())
	}
	if err := g.Admit(5); !errors.Is(err, ErrStaleEpoch) {
		t.Fatalf("reopened fence admitted 5: %v", err)
	}
}

func TestFileFenceNamesACorruptFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "epoch")
	if err := os.WriteFile(path, []byte("seven"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := OpenFileFence(path); err == nil {
		t.Fatal("a corrupt fence file opened")
	}
}
