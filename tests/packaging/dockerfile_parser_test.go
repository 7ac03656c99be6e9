package packaging_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path"
	"strings"
	"testing"
)

// A small Dockerfile reader for the checks in dockerfile_test.go: enough
// of the Dockerfile syntax for otopcua's own file (instructions, line
// continuations, comments, parser directives, --flags, JSON exec form,
// ARG defaults and ${VAR} expansion, shell words), not a general one.

// dfInstruction is one instruction with its continuation lines joined.
type dfInstruction struct {
	Cmd   string            // upper case: FROM, RUN, COPY, …
	Flags map[string]string // leading --name=value flags (COPY --from, HEALTHCHECK --interval)
	Args  string            // the rest, flags removed
	JSON  []string          // the exec (JSON array) form of Args; nil for the shell form
	Line  int               // 1-based line of the instruction's first line
}

func (in dfInstruction) String() string {
	return fmt.Sprintf("line %d: %s %s", in.Line, in.Cmd, in.Args)
}

// dfStage is one FROM and the instructions up to the next.
type dfStage struct {
	Index int
	Name  string // the AS name, lower case; "" without one
	From  dfInstruction
	Base  string            // the image, ARGs expanded
	Vars  map[string]string // ARG values in scope at the stage's end
	Body  []dfInstruction   // after FROM
}

type dfFile struct {
	GlobalArgs map[string]string // ARGs before the first FROM
	Stages     []*dfStage
}

// dfParse reads a Dockerfile; buildArgs play `docker build --build-arg`.
func dfParse(text string, buildArgs map[string]string) (*dfFile, error) {
	ins, err := dfInstructions(text)
	if err != nil {
		return nil, err
	}
	df := &dfFile{GlobalArgs: map[string]string{}}
	var cur *dfStage
	for _, in := range ins {
		switch {
		case in.Cmd == "FROM":
			f := strings.Fields(in.Args)
			if len(f) != 1 && (len(f) != 3 || !strings.EqualFold(f[1], "AS")) {
				return nil, fmt.Errorf("%s: want FROM image [AS name]", in)
			}
			cur = &dfStage{Index: len(df.Stages), From: in, Base: dfExpand(f[0], df.GlobalArgs), Vars: map[string]string{}}
			if len(f) == 3 {
				cur.Name = strings.ToLower(f[2])
			}
			df.Stages = append(df.Stages, cur)
		case in.Cmd == "ARG":
			scope, global := df.GlobalArgs, true
			if cur != nil {
				scope, global = cur.Vars, false
			}
			name, def, hasDef := strings.Cut(in.Args, "=")
			name = strings.TrimSpace(name)
			switch v, given := buildArgs[name]; {
			case given:
				scope[name] = v
			case hasDef:
				scope[name] = dfExpand(dfUnquote(strings.TrimSpace(def)), scope)
			case !global:
				scope[name] = df.GlobalArgs[name] // a global ARG redeclared in the stage
			}
		case cur == nil:
			return nil, fmt.Errorf("%s: only ARG may come before the first FROM", in)
		default:
			cur.Body = append(cur.Body, in)
		}
	}
	if len(df.Stages) == 0 {
		return nil, fmt.Errorf("no FROM")
	}
	return df, nil
}

// dfInstructions splits the text into instructions.
func dfInstructions(text string) ([]dfInstruction, error) {
	var out []dfInstruction
	lines := strings.Split(text, "\n")
	for i := 0; i < len(lines); i++ {
		line := strings.TrimSpace(lines[i])
		if line == "" || strings.HasPrefix(line, "#") { // comments and parser directives
			continue
		}
		start := i + 1
		var b strings.Builder
		for {
			cont := strings.HasSuffix(line, `\`)
			b.WriteString(strings.TrimSuffix(line, `\`))
			if !cont {
				break
			}
			b.WriteString(" ")
			// Comment and empty lines inside a continuation are dropped.
			for i++; i < len(lines); i++ {
				line = strings.TrimSpace(lines[i])
				if line != "" && !strings.HasPrefix(line, "#") {
					break
				}
			}
			if i == len(lines) {
				return nil, fmt.Errorf("line %d: a continuation runs past the end", start)
			}
		}
		cmd, rest, _ := strings.Cut(strings.TrimSpace(b.String()), " ")
		in := dfInstruction{Cmd: strings.ToUpper(cmd), Flags: map[string]string{}, Line: start}
		rest = strings.TrimSpace(rest)
		for strings.HasPrefix(rest, "--") {
			flag, after, _ := strings.Cut(rest, " ")
			k, v, _ := strings.Cut(strings.TrimPrefix(flag, "--"), "=")
			in.Flags[k] = v
			rest = strings.TrimSpace(after)
		}
		in.Args = rest
		if strings.HasPrefix(rest, "[") {
			var a []string
			if err := json.Unmarshal([]byte(rest), &a); err == nil {
				in.JSON = a
			}
		}
		out = append(out, in)
	}
	return out, nil
}

// dfUnquote removes one pair of surrounding double quotes.
func dfUnquote(s string) string {
	if len(s) >= 2 && s[0] == '"' && s[len(s)-1] == '"' {
		return s[1 : len(s)-1]
	}
	return s
}

// dfExpand replaces $NAME, ${NAME} and ${NAME:-default} from vars.
func dfExpand(s string, vars map[string]string) string {
	return os.Expand(s, func(name string) string {
		if n, def, ok := strings.Cut(name, ":-"); ok {
			if v := vars[n]; v != "" {
				return v
			}
			return def
		}
		return vars[name]
	})
}

// dfShellWords splits a shell-form command line the way /bin/sh would for
// simple commands: quotes, backslash escapes and $VAR expansion. Control
// operators (&&, ;, |, redirections) are an error: the caller wants one
// simple command.
func dfShellWords(s string, vars map[string]string) ([]string, error) {
	var words []string
	var w strings.Builder
	inWord := false
	flush := func() {
		if inWord {
			words = append(words, w.String())
			w.Reset()
			inWord = false
		}
	}
	expandAt := func(i int) (string, int) { // s[i] == '$'
		j := i + 1
		if j < len(s) && s[j] == '{' {
			end := strings.IndexByte(s[j:], '}')
			if end < 0 {
				return "$", i + 1
			}
			return dfExpand(s[i:j+end+1], vars), j + end + 1
		}
		for j < len(s) && (s[j] == '_' || s[j] >= 'a' && s[j] <= 'z' || s[j] >= 'A' && s[j] <= 'Z' || s[j] >= '0' && s[j] <= '9') {
			j++
		}
		if j == i+1 {
			return "$", j
		}
		return vars[s[i+1:j]], j
	}
	for i := 0; i < len(s); {
		c := s[i]
		switch {
		case c == ' ' || c == '\t':
			flush()
			i++
		case c == '\'':
			end := strings.IndexByte(s[i+1:], '\'')
			if end < 0 {
				return nil, fmt.Errorf("unterminated ' in %q", s)
			}
			w.WriteString(s[i+1 : i+1+end])
			inWord, i = true, i+end+2
		case c == '"':
			inWord = true
			for i++; ; {
				if i >= len(s) {
					return nil, fmt.Errorf(`unterminated " in %q`, s)
				}
				if s[i] == '"' {
					i++
					break
				}
				if s[i] == '\\' && i+1 < len(s) && strings.IndexByte("$`\"\\", s[i+1]) >= 0 {
					w.WriteByte(s[i+1])
					i += 2
					continue
				}
				if s[i] == '$' {
					v, next := expandAt(i)
					w.WriteString(v)
					i = next
					continue
				}
				w.WriteByte(s[i])
				i++
			}
		case c == '\\' && i+1 < len(s):
			w.WriteByte(s[i+1])
			inWord, i = true, i+2
		case c == '$':
			v, next := expandAt(i)
			w.WriteString(v)
			inWord, i = true, next
		case strings.IndexByte("&;|<>()`", c) >= 0:
			return nil, fmt.Errorf("shell operator %q in %q: want one simple command", c, s)
		default:
			w.WriteByte(c)
			inWord, i = true, i+1
		}
	}
	flush()
	return words, nil
}

// dfIgnore is a .dockerignore file: patterns relative to the context
// root, "**" for any number of folders, "!" re-including, the last
// matching pattern deciding.
type dfIgnore []string

func dfParseIgnore(text string) dfIgnore {
	var ps dfIgnore
	for _, line := range strings.Split(text, "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		ps = append(ps, line)
	}
	return ps
}

// Excludes reports whether the context path p (slash-separated, relative)
// is left out; a path inside an excluded folder is left out too.
func (d dfIgnore) Excludes(p string) bool {
	parts := strings.Split(path.Clean(p), "/")
	excluded := false
	for _, pat := range d {
		neg := strings.HasPrefix(pat, "!")
		pat = strings.Trim(path.Clean(strings.TrimPrefix(pat, "!")), "/")
		for n := 1; n <= len(parts); n++ { // p itself or a folder above it
			if dfMatch(strings.Split(pat, "/"), parts[:n]) {
				excluded = !neg
				break
			}
		}
	}
	return excluded
}

// dfMatch matches path segments against pattern segments.
func dfMatch(pat, parts []string) bool {
	if len(pat) == 0 {
		return len(parts) == 0
	}
	if pat[0] == "**" {
		for k := 0; k <= len(parts); k++ {
			if dfMatch(pat[1:], parts[k:]) {
				return true
			}
		}
		return false
	}
	if len(parts) == 0 {
		return false
	}
	ok, err := path.Match(pat[0], parts[0])
	return err == nil && ok && dfMatch(pat[1:], parts[1:])
}

// TestDockerfileParser checks the reader itself on the constructs it claims.
func TestDockerfileParser(t *testing.T) {
	const text = `# syntax=docker/dockerfile:1
ARG BASE=golang:1
FROM ${BASE} AS Build
ARG BASE
ARG V=dev
RUN echo one \
# a comment inside a continuation
    two \

    three
COPY --from=build --chown=1:1 /a /b
FROM scratch
CMD ["x", "y z"]
HEALTHCHECK --interval=5s CMD ["/bin/x", "health"]
`
	df, err := dfParse(text, map[string]string{"V": "9"})
	if err != nil {
		t.Fatal(err)
	}
	if len(df.Stages) != 2 || df.Stages[0].Name != "build" || df.Stages[0].Base != "golang:1" || df.Stages[1].Base != "scratch" {
		t.Fatalf("stages %+v %+v", df.Stages[0], df.Stages[1])
	}
	b := df.Stages[0]
	if b.Vars["BASE"] != "golang:1" || b.Vars["V"] != "9" {
		t.Errorf("stage vars %v", b.Vars)
	}
	if len(b.Body) != 2 || b.Body[0].Args != "echo one  two  three" || b.Body[0].Line != 6 {
		t.Errorf("RUN %+v", b.Body[0])
	}
	if cp := b.Body[1]; cp.Flags["from"] != "build" || cp.Flags["chown"] != "1:1" || cp.Args != "/a /b" {
		t.Errorf("COPY %+v", cp)
	}
	final := df.Stages[1].Body
	if got := final[0].JSON; len(got) != 2 || got[1] != "y z" {
		t.Errorf("CMD JSON %q", got)
	}
	if hc := final[1]; hc.Flags["interval"] != "5s" || hc.Args != `CMD ["/bin/x", "health"]` {
		t.Errorf("HEALTHCHECK %+v", hc)
	}

	words, err := dfShellWords(`A=1 go build -ldflags "-s -X main.v=${V} -X 'q'" -o '/out/x y' \$HOME $V`, map[string]string{"V": "2"})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"A=1", "go", "build", "-ldflags", "-s -X main.v=2 -X 'q'", "-o", "/out/x y", "$HOME", "2"}
	if fmt.Sprint(words) != fmt.Sprint(want) || len(words) != len(want) {
		t.Errorf("words %q, want %q", words, want)
	}
	if _, err := dfShellWords("go build && rm -rf /", nil); err == nil {
		t.Error("&& accepted")
	}

	ign := dfParseIgnore("# c\n.git\n**/node_modules\n**/*.test\n!keep.test\n")
	for p, want := range map[string]bool{
		".git": true, ".git/HEAD": true, "tests/interop/node_modules/x/y.js": true, "node_modules": true,
		"cmd/otopcua/otopcua.test": true, "keep.test": false, "go.mod": false, "cmd/otopcua/main.go": false, ".github": false,
	} {
		if got := ign.Excludes(p); got != want {
			t.Errorf("Excludes(%q) = %v, want %v", p, got, want)
		}
	}
}
