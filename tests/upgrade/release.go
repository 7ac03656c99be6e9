package upgrade

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// ReleaseFile is where the repository records the previous release,
// relative to its top folder.
const ReleaseFile = "packaging/previous-release"

// Release is a tagged release as ReleaseFile records it.
type Release struct {
	Tag     string // "v0.1.0"
	Commit  string // the tagged commit, 40 hex digits
	Version string // "0.1.0": what the build stamps as main.version
}

// Short is the commit as `otopcua version` prints it.
func (r Release) Short() string { return r.Commit[:7] }

var (
	tagPattern     = regexp.MustCompile(`^v(\d+\.\d+\.\d+)$`)
	commitPattern  = regexp.MustCompile(`^[0-9a-f]{40}$`)
	releaseKeys    = []string{"tag", "commit", "version"}
	errMissingKeys = errors.New("missing keys")
)

// ParseRelease reads the text of ReleaseFile: "key value" lines for tag,
// commit and version, each once, blank lines and "#" comments ignored.
// The version must be the tag without its "v".
func ParseRelease(text string) (Release, error) {
	seen := map[string]string{}
	sc := bufio.NewScanner(strings.NewReader(text))
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		key, value, _ := strings.Cut(line, " ")
		value = strings.TrimSpace(value)
		switch {
		case !slices.Contains(releaseKeys, key):
			return Release{}, fmt.Errorf("line %d: key %q: accepted keys are %s", n, key, strings.Join(releaseKeys, ", "))
		case seen[key] != "":
			return Release{}, fmt.Errorf("line %d: %s given twice", n, key)
		case value == "":
			return Release{}, fmt.Errorf("line %d: %s has no value", n, key)
		}
		seen[key] = value
	}
	r := Release{Tag: seen["tag"], Commit: seen["commit"], Version: seen["version"]}
	var missing []string
	for _, k := range releaseKeys {
		if seen[k] == "" {
			missing = append(missing, k)
		}
	}
	switch m := tagPattern.FindStringSubmatch(r.Tag); {
	case len(missing) > 0:
		return Release{}, fmt.Errorf("%w: %s", errMissingKeys, strings.Join(missing, ", "))
	case m == nil:
		return Release{}, fmt.Errorf("tag %q: accepted is vMAJOR.MINOR.PATCH", r.Tag)
	case !commitPattern.MatchString(r.Commit):
		return Release{}, fmt.Errorf("commit %q: accepted is a full commit hash, 40 lower-case hex digits", r.Commit)
	case r.Version != m[1]:
		return Release{}, fmt.Errorf("version %q: must be the tag %s without its v (%s)", r.Version, r.Tag, m[1])
	}
	return r, nil
}

// ReadRelease reads ReleaseFile in the repository at root.
func ReadRelease(root string) (Release, error) {
	b, err := os.ReadFile(filepath.Join(root, ReleaseFile))
	if err != nil {
		return Release{}, err
	}
	r, err := ParseRelease(string(b))
	if err != nil {
		return Release{}, fmt.Errorf("%s: %w", ReleaseFile, err)
	}
	return r, nil
}

// Git answers the questions Resolve asks of a clone.
type Git interface {
	// TagCommit is the commit a tag names; ok is false when the clone has
	// no such tag.
	TagCommit(tag string) (commit string, ok bool, err error)
	// HasCommit reports whether the clone holds the commit.
	HasCommit(commit string) (bool, error)
}

// Resolve finds the commit of r to build: the tag's when the clone has
// the tag (it must be r.Commit: a tag and a file that disagree are an
// error, not a choice), else r.Commit when the clone has that commit (a
// clone made without tags). how says which. When the clone has neither
// (a shallow clone) the error says so and how to fetch them.
func Resolve(g Git, r Release) (commit, how string, err error) {
	c, ok, err := g.TagCommit(r.Tag)
	if err != nil {
		return "", "", err
	}
	if ok {
		if c != r.Commit {
			return "", "", fmt.Errorf("tag %s is commit %s but %s records %s: correct the file or the tag", r.Tag, c, ReleaseFile, r.Commit)
		}
		return c, "tag " + r.Tag, nil
	}
	has, err := g.HasCommit(r.Commit)
	if err != nil {
		return "", "", err
	}
	if !has {
		return "", "", fmt.Errorf("the previous release is not in this clone: neither tag %s nor commit %s (recorded in %s) is here; "+
			"a shallow or single-branch clone lacks them: git fetch --tags --unshallow origin", r.Tag, r.Commit, ReleaseFile)
	}
	return r.Commit, "commit " + r.Commit + " (no tag " + r.Tag + " in this clone)", nil
}

// Clone is the git repository at Dir, asked through the git command.
type Clone struct{ Dir string }

var _ Git = Clone{}

func (c Clone) git(args ...string) *exec.Cmd {
	cmd := exec.Command("git", append([]string{"-C", c.Dir}, args...)...)
	cmd.Env = append(os.Environ(), "GIT_TERMINAL_PROMPT=0")
	return cmd
}

// TagCommit implements Git.
func (c Clone) TagCommit(tag string) (string, bool, error) {
	out, err := c.git("rev-parse", "--verify", "--quiet", "refs/tags/"+tag+"^{commit}").Output()
	var exit *exec.ExitError
	switch {
	case errors.As(err, &exit) && exit.ExitCode() == 1:
		return "", false, nil
	case err != nil:
		return "", false, fmt.Errorf("git rev-parse %s: %w", tag, err)
	}
	return strings.TrimSpace(string(out)), true, nil
}

// HasCommit implements Git.
func (c Clone) HasCommit(commit string) (bool, error) {
	err := c.git("cat-file", "-e", commit+"^{commit}").Run()
	var exit *exec.ExitError
	switch {
	case err == nil:
		return true, nil
	case errors.As(err, &exit):
		return false, nil
	}
	return false, fmt.Errorf("git cat-file %s: %w", commit, err)
}

// Build checks out commit (Resolve's) of the clone at root into a new
// detached git worktree in a temporary folder and builds ./cmd/otopcua
// there as r would be released: no race detector (the old nodes should
// be cheap), r's version and short commit stamped. It returns the
// binary's path; the worktree is removed when t ends. The build uses
// -trimpath so that the compiled packages do not depend on the temporary
// folder's name and the Go build cache serves every later run.
func Build(t testing.TB, root string, r Release, commit string) string {
	t.Helper()
	dir := t.TempDir()
	src, bin := filepath.Join(dir, "src"), filepath.Join(dir, "otopcua-"+r.Version)
	c := Clone{Dir: root}
	if out, err := c.git("worktree", "add", "--detach", src, commit).CombinedOutput(); err != nil {
		t.Fatalf("git worktree add %s %s: %v\n%s", src, commit, err, out)
	}
	t.Cleanup(func() {
		if out, err := c.git("worktree", "remove", "--force", src).CombinedOutput(); err != nil {
			t.Logf("git worktree remove %s: %v\n%s", src, err, out)
			_ = c.git("worktree", "prune").Run() // the folder goes with t's TempDir; drop git's record of it
		}
	})
	build := exec.Command("go", "build", "-trimpath", "-o", bin,
		"-ldflags", fmt.Sprintf("-X main.version=%s -X main.commit=%s", r.Version, r.Short()), "./cmd/otopcua")
	build.Dir = src
	build.Env = append(os.Environ(), "GOWORK=off")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building %s (%s): %v\n%s", r.Tag, commit, err, out)
	}
	return bin
}
