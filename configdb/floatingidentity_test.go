package configdb

import (
	"bytes"
	"errors"
	"testing"
)

// testFloatingIdentity: a cluster's floating identity is stored once and
// read back byte for byte by another handle (another node); a second store
// is refused unless it replaces; another cluster has none; a partial
// identity is refused.
func testFloatingIdentity(t *testing.T, open opener) {
	a, b := migrated(t, open(t, nil)), open(t, nil)
	ctx := ctxT(t)
	if _, err := b.FloatingIdentity(ctx, "c1"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("before any: %v, want ErrNotFound", err)
	}
	first := FloatingIdentity{ApplicationURI: "urn:otopcua:floating:c1", Certificate: []byte{0x30, 0x82, 0, 1, 0xff}, SealedKey: []byte{1, 0, 2, 0xfe}}
	if err := a.PutFloatingIdentity(ctx, "c1", first, false); err != nil {
		t.Fatal(err)
	}
	got, err := b.FloatingIdentity(ctx, "c1")
	if err != nil {
		t.Fatal(err)
	}
	if got.ApplicationURI != first.ApplicationURI || !bytes.Equal(got.Certificate, first.Certificate) || !bytes.Equal(got.SealedKey, first.SealedKey) || got.CreatedAt.IsZero() {
		t.Fatalf("read back %+v, want %+v", got, first)
	}
	second := FloatingIdentity{ApplicationURI: "urn:other", Certificate: []byte{9}, SealedKey: []byte{8}}
	if err := b.PutFloatingIdentity(ctx, "c1", second, false); !errors.Is(err, ErrFloatingIdentityExists) {
		t.Fatalf("second store without replace: %v, want ErrFloatingIdentityExists", err)
	}
	if got, _ := a.FloatingIdentity(ctx, "c1"); got.ApplicationURI != first.ApplicationURI {
		t.Fatalf("a refused store changed the row: %+v", got)
	}
	if err := b.PutFloatingIdentity(ctx, "c1", second, true); err != nil {
		t.Fatalf("replace: %v", err)
	}
	if got, _ := a.FloatingIdentity(ctx, "c1"); got.ApplicationURI != "urn:other" || !bytes.Equal(got.SealedKey, []byte{8}) {
		t.Fatalf("after replace: %+v", got)
	}
	if _, err := a.FloatingIdentity(ctx, "c2"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("another cluster: %v, want ErrNotFound", err)
	}
	if err := a.PutFloatingIdentity(ctx, "c2", FloatingIdentity{ApplicationURI: "urn:x", Certificate: []byte{1}}, false); !errors.Is(err, ErrInvalid) {
		t.Fatalf("without a sealed key: %v, want ErrInvalid", err)
	}
}
