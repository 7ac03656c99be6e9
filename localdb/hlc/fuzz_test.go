package hlc

import "testing"

func FuzzParse(f *testing.F) {
	f.Add("000001700000000.0000000003.node-a")
	f.Add("")
	f.Fuzz(func(t *testing.T, text string) {
		s, err := Parse(text)
		if err == nil && s.String() != text {
			t.Fatalf("Parse(%q) accepted a non-canonical form of %v", text, s)
		}
	})
}

func FuzzDecodeBinary(f *testing.F) {
	b, _ := Stamp{WallMs: 1, Counter: 2, Node: "n"}.MarshalBinary()
	f.Add(b)
	f.Fuzz(func(t *testing.T, b []byte) {
		s, rest, err := DecodeBinary(b)
		if err != nil {
			return
		}
		again, err := s.AppendBinary(nil)
		if err != nil || string(again) != string(b[:len(b)-len(rest)]) {
			t.Fatalf("decoded %v does not re-encode to its bytes", s)
		}
	})
}
