package hoconcompat

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// dump renders a resolved value compactly for comparisons: strings quoted,
// other scalars as written, objects in key order.
func dump(v *Value) string {
	switch v.kind {
	case Object:
		parts := make([]string, 0, len(v.fields))
		for _, k := range v.Keys() {
			parts = append(parts, k+":"+dump(v.fields[k]))
		}
		return "{" + strings.Join(parts, ",") + "}"
	case Array:
		parts := make([]string, len(v.elems))
		for i, e := range v.elems {
			parts[i] = dump(e)
		}
		return "[" + strings.Join(parts, ",") + "]"
	case String:
		return quote(v.text)
	case Null, Bool, Number:
		return v.text
	}
	return "<unresolved " + v.kind.String() + ">"
}

func mustParse(t *testing.T, src string) *Document {
	t.Helper()
	d, err := Parse("t.conf", []byte(src))
	if err != nil {
		t.Fatalf("Parse(%q): %v", src, err)
	}
	return d
}

func TestParseValues(t *testing.T) {
	for _, tc := range []struct {
		name, src, want string
	}{
		{"separators", "a = 1\nb : 2, c { d = x }", `{a:1,b:2,c:{d:"x"}}`},
		{"root braces", "{ a = 1 }", `{a:1}`},
		{"dotted keys nest", "akka.cluster.roles = [admin]", `{akka:{cluster:{roles:["admin"]}}}`},
		{"quoted key keeps dots", `"a.b" = 1, a."c.d" = 2`, `{a.b:1,a:{c.d:2}}`},
		{"objects merge", "a { x = 1 }\na { y = 2 }\na.x = 3", `{a:{x:3,y:2}}`},
		{"later scalar wins", "a = 1\na = 2", `{a:2}`},
		{"scalar replaces object", "a { x = 1 }\na = 2", `{a:2}`},
		{"object replaces scalar", "a = 2\na { x = 1 }", `{a:{x:1}}`},
		{"key newline brace", "a\n{\n x = 1\n}", `{a:{x:1}}`},
		{"types", "s = hello, q = \"15s\", n = -1.5e3, t = true, f = false, z = null, on = on", `{s:"hello",q:"15s",n:-1.5e3,t:true,f:false,z:null,on:"on"}`},
		{"duration concatenation keeps the space", "a = 15 s\nb = 15s\nc = 1 minute", `{a:"15 s",b:"15s",c:"1 minute"}`},
		{"concatenation of quoted and unquoted", `a = "akka.tcp://" sys "@host"`, `{a:"akka.tcp:// sys @host"}`},
		{"lists over lines with trailing comma", "a = [\n  1,\n  2\n  3,\n]", `{a:[1,2,3]}`},
		{"empty list and object", "a = [], b {}", `{a:[],b:{}}`},
		{"list of objects", "a = [{x = 1}, {y = 2}]", `{a:[{x:1},{y:2}]}`},
		{"comments", "# top\na = 1 # trailing\n// slashes\nb = 2 // trailing\nc = \"# not a comment\"", `{a:1,b:2,c:"# not a comment"}`},
		{"url needs quotes", `a = "http://x/y"`, `{a:"http://x/y"}`},
		{"triple quotes", "a = \"\"\"line \"one\"\nline two\"\"\"\"", `{a:"line \"one\"\nline two\""}`},
		{"escapes", `a = "tab\there \"q\" \\ \u00e9"`, `{a:"tab\there \"q\" \\ é"}`},
		{"substitution forward", "a = ${b}\nb = 5", `{a:5,b:5}`},
		{"substitution sees the final value", "b = 1\na = ${b}\nb = 2", `{b:2,a:2}`},
		{"substitution in a string", "h = node-a\ns = \"akka.tcp://otopcua@\"${h}\":4053\"", `{h:"node-a",s:"akka.tcp://otopcua@node-a:4053"}`},
		{"substitution of an object merges", "base { x = 1, y = 1 }\nc = ${base} { y = 2 }", `{base:{x:1,y:1},c:{x:1,y:2}}`},
		{"object after substitution merges", "base { x = 1 }\nc = ${base}\nc { y = 2 }", `{base:{x:1},c:{x:1,y:2}}`},
		{"self reference appends", "a = [1]\na = ${a} [2]\na += 3", `{a:[1,2,3]}`},
		{"plus-equals creates a list", "a += x", `{a:["x"]}`},
		{"optional undefined keeps the earlier value", "a = 1\na = ${?NOT_DEFINED}", `{a:1}`},
		{"optional undefined leaves no field", "a = ${?NOT_DEFINED}\nb = 2", `{b:2}`},
		{"optional undefined in a list drops the element", "a = [1, ${?NOPE}, 2]", `{a:[1,2]}`},
		{"optional defined in the document", "x = 3\na = ${?x}", `{x:3,a:3}`},
		{"include is skipped", "include \"other.conf\"\na = 1", `{a:1}`},
		{"include-like key", "includes = 1\ninclude = 2", `{includes:1,include:2}`},
		{"byte order mark", "\ufeffa = 1", `{a:1}`},
		{"key with spaces", "fork-join-executor { parallelism - min = 8 }\na b {c = 1}", `{fork-join-executor:{parallelism - min:8},a b:{c:1}}`},
		{"quoted pieces join", `a"b.c"d = 1`, `{ab.cd:1}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := mustParse(t, tc.src)
			if got := dump(d.Root()); got != tc.want {
				t.Errorf("Parse(%q)\n got %s\nwant %s", tc.src, got, tc.want)
			}
		})
	}
}

func TestParseWarnings(t *testing.T) {
	d := mustParse(t, "include \"site.conf\"\ninclude required(file(\"x.conf\"))\na = ${?SEEDS}\nb = ${REQUIRED_ENV}\n")
	w := d.Warnings()
	if len(w) != 4 {
		t.Fatalf("warnings %v, want 4", w)
	}
	for i, want := range []string{
		`t.conf:1:1: include "site.conf" ignored`,
		`t.conf:2:1: include required(file("x.conf")) ignored`,
		`t.conf:3:5: ${?SEEDS} is not defined in this file; Akka would read the environment variable SEEDS`,
		`t.conf:4:5: ${REQUIRED_ENV} is not defined in this file; Akka would read the environment variable REQUIRED_ENV or refuse to start`,
	} {
		if !strings.HasPrefix(w[i].String(), want) {
			t.Errorf("warning %d = %q, want prefix %q", i, w[i], want)
		}
	}
	if d.Get("a") != nil || d.Get("b") != nil {
		t.Errorf("undefined substitutions left values: a=%v b=%v", d.Get("a"), d.Get("b"))
	}
}

func TestParseErrors(t *testing.T) {
	for _, tc := range []struct {
		src, want string
	}{
		{"a = ", "t.conf:1:5: expected a value"},
		{"a = 1\nb", "t.conf:2:2: unexpected end of file after key b"},
		{"a {\n  b = 1\n", "t.conf:3:1: missing '}' to close the object opened at line 1 column 3"},
		{"a = 1\n}", "t.conf:2:1: unexpected '}'"},
		{"a = [1, 2", "t.conf:1:5: missing ']'"},
		{"a = \"open\nb = 1", "t.conf:1:5: unterminated quoted string"},
		{`a = "bad \q"`, `t.conf:1:10: invalid escape \'q'`},
		{`a = "\u12"`, `t.conf:1:6: \u needs four hexadecimal digits`},
		{"a = 1 2 = 3", "t.conf:1:9: unexpected '=' in a value: quote strings that contain it"},
		{"a = akka.tcp://x@y:1", "t.conf:1:13: unexpected ':' in a value: quote strings that contain it"},
		{"a..b = 1", "t.conf:1:3: empty key segment"},
		{"= 1", "t.conf:1:1: expected a key"},
		{"a = 1,, b = 2", "t.conf:1:7: unexpected ','"},
		{"a = ${b}\nb = ${a}", "t.conf:2:5: substitution ${a} is part of a cycle"},
		{"a { b = ${a} }", "t.conf:1:9: substitution ${a} is part of a cycle"},
		{"a = [1] x", "cannot concatenate a list and a string"},
		{"a = ${b\n", "t.conf:1:8: unexpected end of line in a substitution"},
		{"[1, 2]", "t.conf:1:1: a list at the top of the file"},
		{"a = { x = 1 } y", "a value after an object on the same line is not supported"},
		{strings.Repeat("a {", maxDepth+1), "nesting deeper than"},
	} {
		_, err := Parse("t.conf", []byte(tc.src))
		var se *SyntaxError
		if !errors.As(err, &se) {
			t.Errorf("Parse(%q) = %v, want a *SyntaxError", tc.src, err)
			continue
		}
		if !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Parse(%q)\n got %v\nwant %q", tc.src, err, tc.want)
		}
	}
}

func TestParseExpansionIsBounded(t *testing.T) {
	var b strings.Builder
	b.WriteString("a0 = [1, 1]\n")
	for i := 1; i < 40; i++ {
		b.WriteString("a" + strconv.Itoa(i) + " = ${a" + strconv.Itoa(i-1) + "} ${a" + strconv.Itoa(i-1) + "}\n")
	}
	_, err := Parse("t.conf", []byte(b.String()))
	if err == nil || !strings.Contains(err.Error(), "substitutions expand to more than") {
		t.Fatalf("doubling 40 times: err = %v, want the expansion limit", err)
	}
}

func TestParseTestdataSyntaxError(t *testing.T) {
	path := filepath.Join("testdata", "syntax-error.conf")
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	_, err = Parse(path, data)
	if err == nil || !strings.HasPrefix(err.Error(), path+":4:3: unexpected '}': missing ']' to close the list opened at line 3 column 13") {
		t.Fatalf("err = %v", err)
	}
}

func TestDocumentGet(t *testing.T) {
	d := mustParse(t, `akka.cluster { "odd.key" = 1, roles = [a] }`)
	if v := d.Get(`akka.cluster."odd.key"`); v == nil || v.Text() != "1" || v.Kind() != Number {
		t.Errorf("quoted path: %v", v)
	}
	if v := d.Get("akka.cluster.roles"); v == nil || v.Kind() != Array || len(v.Elems()) != 1 {
		t.Errorf("roles: %v", v)
	}
	for _, p := range []string{"akka.missing", "akka.cluster.roles.x", "akka..cluster", ""} {
		if v := d.Get(p); v != nil {
			t.Errorf("Get(%q) = %v, want nil", p, dump(v))
		}
	}
	if pos := d.Get("akka.cluster.roles").Pos(); pos.String() != "t.conf:1:39" {
		t.Errorf("roles position %v", pos)
	}
}

func TestParseDuration(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want string
	}{
		{"15s", "15s"}, {"15 s", "15s"}, {"20000ms", "20s"}, {"20000", "20s"}, {"1m", "1m0s"},
		{"1.5s", "1.5s"}, {"100 ms", "100ms"}, {"2 minutes", "2m0s"}, {"1 d", "24h0m0s"},
		{"500us", "500µs"}, {"7 nanos", "7ns"}, {"0s", "0s"},
	} {
		d, err := ParseDuration(tc.in)
		if err != nil || d.String() != tc.want {
			t.Errorf("ParseDuration(%q) = %v, %v; want %s", tc.in, d, err, tc.want)
		}
	}
	for _, bad := range []string{"", "s", "15 fortnights", "-1s", "1.2.3s", ".5s", "off", "99999999999999999999s", "9223372036854775807d"} {
		if d, err := ParseDuration(bad); err == nil {
			t.Errorf("ParseDuration(%q) = %v, want an error", bad, d)
		}
	}
}

func TestFormatDurationRoundTrips(t *testing.T) {
	for _, s := range []string{"15s", "100ms", "2m", "1h", "1500us", "7ns", "3d", "0s"} {
		d, err := ParseDuration(s)
		if err != nil {
			t.Fatal(err)
		}
		if got := FormatDuration(d); got != s {
			t.Errorf("FormatDuration(%v) = %q, want %q", d, got, s)
		}
	}
}
