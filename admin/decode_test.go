package admin

import (
	"errors"
	"net/url"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"
)

func TestDecodeLogin(t *testing.T) {
	cases := []struct {
		body     string
		wantErr  string // substring; "" = success
		wantNext string
	}{
		{body: "name=alice&password=s3cret", wantNext: "/"},
		{body: "name=alice&password=s3cret&next=%2Fclusters%2Fa%2Fredundancy", wantNext: "/clusters/a/redundancy"},
		{body: "name=&password=x", wantErr: "user name is empty"},
		{body: "password=x", wantErr: "user name is empty"},
		{body: "name=alice", wantErr: "password is empty"},
		{body: "name=alice&password=x&role=Administrator", wantErr: "unknown form field"},
		{body: "name=alice&name=bob&password=x", wantErr: "given 2 times"},
		{body: "name=alice&password=x&next=https%3A%2F%2Fevil.example", wantErr: "next must be a page of this server"},
		{body: "name=alice&password=x&next=%2F%2Fevil.example", wantErr: "next must be a page of this server"},
		{body: "name=alice&password=x&next=%2F%5Cevil.example", wantErr: "next must be a page of this server"},
		{body: "name=a%00b&password=x", wantErr: "printable"},
		{body: "name=" + strings.Repeat("a", 65) + "&password=x", wantErr: "1 to 64"},
		{body: "name=alice&password=" + strings.Repeat("p", 1025), wantErr: "longer than 1024"},
		{body: "name=%zz", wantErr: "not url-encoded"},
	}
	for _, c := range cases {
		f, err := decodeLogin([]byte(c.body))
		if c.wantErr == "" {
			if err != nil || f.Next != c.wantNext || f.Name != "alice" || f.Password != "s3cret" {
				t.Errorf("decodeLogin(%q) = %+v, %v; want alice/s3cret next %q", c.body, f, err, c.wantNext)
			}
			continue
		}
		if err == nil || !errors.Is(err, errInvalid) || !strings.Contains(err.Error(), c.wantErr) {
			t.Errorf("decodeLogin(%q) error = %v; want one saying %q", c.body, err, c.wantErr)
		}
	}
}

func TestParseClusterID(t *testing.T) {
	for _, ok := range []string{"a", "line-1", "Linie 3 Süd", strings.Repeat("x", 64), strings.Repeat("é", 64)} {
		if got, err := parseClusterID(ok); err != nil || got != ok {
			t.Errorf("parseClusterID(%q) = %q, %v; want it accepted", ok, got, err)
		}
	}
	for _, bad := range []string{"", strings.Repeat("x", 65), "a\x00b", "a\nb", "\xff", "a\u200bb"} {
		if _, err := parseClusterID(bad); err == nil || !strings.Contains(err.Error(), "ClusterId") {
			t.Errorf("parseClusterID(%q) error = %v; want one naming the accepted ClusterId", bad, err)
		}
	}
}

func TestDecodeFailoverRequest(t *testing.T) {
	for body, want := range map[string]string{"": "", "  ": "", "{}": "", `{"expectTarget":"10.0.0.1:4053"}`: "10.0.0.1:4053"} {
		if got, err := decodeFailoverRequest([]byte(body)); err != nil || got.ExpectTarget != want {
			t.Errorf("decodeFailoverRequest(%q) = %+v, %v; want expectTarget %q", body, got, err, want)
		}
	}
	for _, bad := range []string{`{"target":"x"}`, `{"expectTarget":"x"} {}`, `[1]`, `{"expectTarget":1}`, `{"expectTarget":"a\u0000"}`, `nope`} {
		if _, err := decodeFailoverRequest([]byte(bad)); err == nil || !errors.Is(err, errInvalid) {
			t.Errorf("decodeFailoverRequest(%q) error = %v; want it refused", bad, err)
		}
	}
}

func FuzzDecodeLogin(f *testing.F) {
	f.Add([]byte("name=alice&password=s3cret"))
	f.Add([]byte("name=alice&password=x&next=%2Faudit"))
	f.Add([]byte("name=a&name=b&password=x"))
	f.Add([]byte("next=//evil&name=a&password=b"))
	f.Add([]byte("%zz=1"))
	f.Fuzz(func(t *testing.T, body []byte) {
		got, err := decodeLogin(body)
		if err != nil {
			if !errors.Is(err, errInvalid) {
				t.Fatalf("decodeLogin error %v does not wrap errInvalid", err)
			}
			return
		}
		if got.Name == "" || utf8.RuneCountInString(got.Name) > maxNameLen || !utf8.ValidString(got.Name) {
			t.Fatalf("accepted name %q", got.Name)
		}
		if got.Password == "" || len(got.Password) > maxPasswordLen {
			t.Fatalf("accepted password of %d bytes", len(got.Password))
		}
		if !localPath(got.Next) || strings.HasPrefix(got.Next, "//") {
			t.Fatalf("accepted next %q", got.Next)
		}
		// What was accepted survives a round trip through a browser form.
		again, err := decodeLogin([]byte(url.Values{"name": {got.Name}, "password": {got.Password}, "next": {got.Next}}.Encode()))
		if err != nil || again != got {
			t.Fatalf("round trip of %+v gave %+v, %v", got, again, err)
		}
	})
}

func FuzzParseClusterID(f *testing.F) {
	for _, s := range []string{"a", "line-1", "", "a/b", "\xff", strings.Repeat("x", 65)} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		_, err := parseClusterID(s)
		// Brute-force statement of the rule.
		want := s != "" && utf8.ValidString(s) && utf8.RuneCountInString(s) <= maxClusterIDLen
		for _, r := range s {
			want = want && unicode.IsPrint(r)
		}
		if (err == nil) != want {
			t.Fatalf("parseClusterID(%q) error = %v; the rule says accepted=%v", s, err, want)
		}
	})
}

func FuzzDecodeFailoverRequest(f *testing.F) {
	f.Add([]byte(`{"expectTarget":"10.0.0.1:4053"}`))
	f.Add([]byte(`{}`))
	f.Add([]byte(`{"x":1}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		got, err := decodeFailoverRequest(body)
		if err != nil && !errors.Is(err, errInvalid) {
			t.Fatalf("error %v does not wrap errInvalid", err)
		}
		if err == nil && !printable(got.ExpectTarget) {
			t.Fatalf("accepted expectTarget %q", got.ExpectTarget)
		}
	})
}
