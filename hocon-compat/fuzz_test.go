package hoconcompat

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// FuzzParse: Parse never panics; what it accepts, Extract reads without
// panicking; and when the settings are usable, what Render writes for them
// parses again.
func FuzzParse(f *testing.F) {
	files, _ := filepath.Glob(filepath.Join("testdata", "*.conf"))
	for _, name := range files {
		if data, err := os.ReadFile(name); err == nil {
			f.Add(data)
		}
	}
	for _, s := range []string{
		"a = ${b}\nb = ${a}",
		"a = [1]\na = ${a} [2]\na += 3",
		"a { b = ${a} }",
		"x = ${?X} ${?Y}\ny = \"\"\"\"\"\"\"",
		"a.b.c = 1\na = ${a.b} {d = 2}\na.b { e = 3 }",
		"include required(file(\"x\"))\nk = \"\\u00e9\"",
		"akka.cluster.split-brain-resolver { active-strategy = static-quorum, static-quorum.quorum-size = 2 }\nakka.cluster.downing-provider-class = \"Akka.Cluster.SBR.SplitBrainResolverProvider\"",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		doc, err := Parse("fuzz.conf", data)
		if err != nil {
			var se *SyntaxError
			if !errors.As(err, &se) || !se.Pos.IsValid() {
				t.Fatalf("error without a position: %v", err)
			}
			return
		}
		h, _, err := Extract(doc)
		if err != nil {
			return
		}
		e, _ := Effective(defaultJSON(), nil, h)
		if e.Validate() != nil {
			return
		}
		if _, err := Parse("rendered.conf", []byte(Render(e))); err != nil {
			t.Fatalf("Render output does not parse: %v\n%s", err, Render(e))
		}
	})
}
