package pki

import (
	"errors"
	"testing"
)

// FuzzValidate feeds arbitrary bytes to Validate's parsing path: it must
// answer a *ValidationError (or accept a trusted certificate), never panic.
func FuzzValidate(f *testing.F) {
	fx := newFixture(f, Options{MaxRejected: 16})
	c := client(f)
	put(f, fx.dir, DirTrustedCerts, c)
	fx.clock.Advance(ReloadInterval)
	f.Add(c.Raw)
	f.Add(c.Raw[:len(c.Raw)-1])
	f.Add(append(append([]byte{}, c.Raw...), c.Raw[:40]...))
	f.Add([]byte{0x30, 0x82, 0xff, 0xff})
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, der []byte) {
		err := fx.s.Validate(der, clientURI)
		var ve *ValidationError
		if err != nil && !errors.As(err, &ve) {
			t.Fatalf("Validate returned %T %v, want *ValidationError", err, err)
		}
	})
}

// BenchmarkValidateTrusted is a repeat validation of a trusted client
// certificate: the chain is cached, so it costs the SHA-1 of the input, a
// map look-up and the time and URI checks.
func BenchmarkValidateTrusted(b *testing.B) {
	fx := newFixture(b, Options{})
	c := client(b)
	put(b, fx.dir, DirTrustedCerts, c)
	fx.clock.Advance(ReloadInterval)
	if err := fx.s.Validate(c.Raw, clientURI); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if err := fx.s.Validate(c.Raw, clientURI); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkValidateFirst is the first validation of a certificate signed
// by a trusted CA (nothing cached): parse, chain, two signature checks.
func BenchmarkValidateFirst(b *testing.B) {
	fx := newFixture(b, Options{})
	ca := mkCert(b, spec{cn: "Plant CA", ca: true})
	put(b, fx.dir, DirTrustedCerts, ca)
	leaf := mkCert(b, spec{uri: clientURI, parent: ca, parentKey: caKey})
	fx.clock.Advance(ReloadInterval)
	b.ReportAllocs()
	for b.Loop() {
		fx.s.invalidate()
		fx.clock.Advance(ReloadInterval)
		if err := fx.s.Validate(leaf.Raw, clientURI); err != nil {
			b.Fatal(err)
		}
	}
}
