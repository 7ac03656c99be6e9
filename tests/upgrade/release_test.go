package upgrade

import (
	"strings"
	"testing"

	"github.com/otopcua/otopcua/tests/procs"
)

const hash = "001b4cd538ccc24916acd9272d3ace593c31c7bf"

func TestParseRelease(t *testing.T) {
	good := "# comment\n\ntag v0.1.0\ncommit " + hash + "\nversion 0.1.0\n"
	r, err := ParseRelease(good)
	if err != nil || r != (Release{Tag: "v0.1.0", Commit: hash, Version: "0.1.0"}) || r.Short() != "001b4cd" {
		t.Fatalf("ParseRelease = %+v, %v", r, err)
	}
	for name, c := range map[string]struct{ text, want string }{
		"missing commit":   {"tag v0.1.0\nversion 0.1.0\n", "missing keys: commit"},
		"unknown key":      {good + "branch main\n", `key "branch"`},
		"twice":            {good + "tag v0.2.0\n", "tag given twice"},
		"no value":         {"tag\n", "tag has no value"},
		"short hash":       {"tag v0.1.0\ncommit 001b4cd\nversion 0.1.0\n", "full commit hash"},
		"tag not semver":   {"tag release-1\ncommit " + hash + "\nversion 1\n", "vMAJOR.MINOR.PATCH"},
		"version mismatch": {"tag v0.1.0\ncommit " + hash + "\nversion 0.2.0\n", "without its v (0.1.0)"},
	} {
		if _, err := ParseRelease(c.text); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want one saying %q", name, err, c.want)
		}
	}
}

// TestTheRecordedReleaseParses: the committed file is well formed.
func TestTheRecordedReleaseParses(t *testing.T) {
	if _, err := ReadRelease(procs.RepoRoot()); err != nil {
		t.Fatal(err)
	}
}

// fakeGit is a clone with the given tags and commits.
type fakeGit struct {
	tags    map[string]string
	commits map[string]bool
}

func (g fakeGit) TagCommit(tag string) (string, bool, error) {
	c, ok := g.tags[tag]
	return c, ok, nil
}

func (g fakeGit) HasCommit(c string) (bool, error) { return g.commits[c], nil }

func TestResolve(t *testing.T) {
	r := Release{Tag: "v0.1.0", Commit: hash, Version: "0.1.0"}
	other := strings.Repeat("a", 40)
	for name, c := range map[string]struct {
		git           fakeGit
		commit, error string
	}{
		"the tag":                  {fakeGit{tags: map[string]string{"v0.1.0": hash}, commits: map[string]bool{hash: true}}, hash, ""},
		"no tags: the commit":      {fakeGit{commits: map[string]bool{hash: true}}, hash, ""},
		"a shallow clone":          {fakeGit{}, "", "neither tag v0.1.0 nor commit " + hash},
		"a tag on another commit":  {fakeGit{tags: map[string]string{"v0.1.0": other}, commits: map[string]bool{hash: true}}, "", "tag v0.1.0 is commit " + other},
		"the tag without the file": {fakeGit{tags: map[string]string{"v0.1.0": hash}}, hash, ""},
	} {
		got, how, err := Resolve(c.git, r)
		switch {
		case c.error == "" && (err != nil || got != c.commit || how == ""):
			t.Errorf("%s: %q (%s), %v; want %s", name, got, how, err, c.commit)
		case c.error != "" && (err == nil || !strings.Contains(err.Error(), c.error)):
			t.Errorf("%s: error %v, want one saying %q", name, err, c.error)
		}
	}
}
