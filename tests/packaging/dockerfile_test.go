package packaging_test

import (
	"debug/elf"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/otopcua/otopcua/config"
	"github.com/otopcua/otopcua/tests/procs"
)

// The build arguments the checks use, as `docker build --build-arg` would
// pass them: the version and commit must reach the binary.
var dfBuildArgs = map[string]string{"VERSION": "0.0.0-dockerfile-test", "COMMIT": "d0cce11"}

// The image's layout the checks hold the Dockerfile to.
const (
	dfBinary  = "/usr/local/bin/otopcua"
	dfConfDir = "/etc/otopcua"
	dfDataDir = "/var/lib/otopcua"
)

func dfLoad(t *testing.T) *dfFile {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(procs.RepoRoot(), "Dockerfile"))
	if err != nil {
		t.Fatal(err)
	}
	df, err := dfParse(string(b), dfBuildArgs)
	if err != nil {
		t.Fatalf("Dockerfile: %v", err)
	}
	return df
}

// stage returns the stage named or numbered ref ("build", "0").
func (df *dfFile) stage(ref string) *dfStage {
	for _, s := range df.Stages {
		if s.Name == strings.ToLower(ref) || strconv.Itoa(s.Index) == ref {
			return s
		}
	}
	return nil
}

func (df *dfFile) final() *dfStage { return df.Stages[len(df.Stages)-1] }

// only returns the stage's single instruction cmd.
func (s *dfStage) only(t *testing.T, cmd string) dfInstruction {
	t.Helper()
	var found []dfInstruction
	for _, in := range s.Body {
		if in.Cmd == cmd {
			found = append(found, in)
		}
	}
	if len(found) != 1 {
		t.Fatalf("stage %d (%s) has %d %s instructions, want 1: %v", s.Index, s.Base, len(found), cmd, found)
	}
	return found[0]
}

// words splits a shell-form instruction's arguments with the stage's ARGs.
func (s *dfStage) words(t *testing.T, in dfInstruction) []string {
	t.Helper()
	w, err := dfShellWords(in.Args, s.Vars)
	if err != nil {
		t.Fatalf("%s: %v", in, err)
	}
	return w
}

// dfGoBuild is the builder's `go build` RUN: its environment assignments
// and the go command's arguments, ARGs substituted.
type dfGoBuild struct {
	stage *dfStage
	in    dfInstruction
	env   []string // NAME=VALUE before "go"
	args  []string // after "go": build …
	out   string   // the -o path
}

func dfFindGoBuild(t *testing.T, df *dfFile) dfGoBuild {
	t.Helper()
	for _, s := range df.Stages {
		for _, in := range s.Body {
			if in.Cmd != "RUN" || !strings.Contains(in.Args, "go build") {
				continue
			}
			words := s.words(t, in)
			g := dfGoBuild{stage: s, in: in}
			i := 0
			for ; i < len(words) && strings.Contains(words[i], "=") && !strings.HasPrefix(words[i], "-"); i++ {
				g.env = append(g.env, words[i])
			}
			if i+1 >= len(words) || words[i] != "go" || words[i+1] != "build" {
				t.Fatalf("%s: want [NAME=VALUE …] go build …", in)
			}
			g.args = words[i+1:]
			if j := slices.Index(g.args, "-o"); j >= 0 && j+1 < len(g.args) {
				g.out = g.args[j+1]
			} else {
				t.Fatalf("%s: no -o", in)
			}
			return g
		}
	}
	t.Fatal("no RUN … go build in the Dockerfile")
	return dfGoBuild{}
}

func TestDockerfileStages(t *testing.T) {
	df := dfLoad(t)
	if len(df.Stages) < 2 {
		t.Fatalf("%d stages, want a builder and a final stage", len(df.Stages))
	}
	if got := df.GlobalArgs["GO_IMAGE"]; got != "golang:1.26-bookworm" {
		t.Errorf("ARG GO_IMAGE default %q, want golang:1.26-bookworm", got)
	}
	if b := df.Stages[0].Base; b != "golang:1.26-bookworm" {
		t.Errorf("builder FROM %q (expanded), want golang:1.26-bookworm", b)
	}
	if b := df.final().Base; b != "scratch" {
		t.Errorf("final stage FROM %q, want scratch", b)
	}
	names := map[string]bool{}
	for _, s := range df.Stages {
		if s.Name != "" && names[s.Name] {
			t.Errorf("two stages named %q", s.Name)
		}
		names[s.Name] = true
	}
	// Every COPY --from names an earlier stage (not an image).
	for _, s := range df.Stages {
		for _, in := range s.Body {
			if in.Cmd != "COPY" && in.Cmd != "ADD" {
				continue
			}
			if in.Cmd == "ADD" {
				t.Errorf("%s: use COPY", in)
			}
			from, ok := in.Flags["from"]
			if !ok {
				continue
			}
			if src := df.stage(from); src == nil || src.Index >= s.Index {
				t.Errorf("%s: --from=%s is no earlier stage", in, from)
			}
		}
	}
}

// TestDockerfileBuilderLayers: go.mod and go.sum are copied and the
// modules downloaded before the sources, so that a source change reuses
// the download layer; the build sees the whole source tree at WORKDIR.
func TestDockerfileBuilderLayers(t *testing.T) {
	df := dfLoad(t)
	g := dfFindGoBuild(t, df)
	step := map[string]int{}
	workdir := ""
	for i, in := range g.stage.Body {
		switch {
		case in.Cmd == "WORKDIR" && step["copyAll"] == 0:
			workdir = in.Args
		case in.Cmd == "COPY" && in.Args == "go.mod go.sum ./":
			step["copyMod"] = i + 1
		case in.Cmd == "RUN" && in.Args == "go mod download":
			step["download"] = i + 1
		case in.Cmd == "COPY" && in.Args == ". .":
			step["copyAll"] = i + 1
		case in.Line == g.in.Line:
			step["build"] = i + 1
		}
	}
	if workdir == "" || !(step["copyMod"] > 0 && step["copyMod"] < step["download"] && step["download"] < step["copyAll"] && step["copyAll"] < step["build"]) {
		t.Errorf("builder order (1-based positions) %v with WORKDIR %q: want WORKDIR, COPY go.mod go.sum ./, RUN go mod download, COPY . ., then the build", step, workdir)
	}
	for _, want := range []string{"CGO_ENABLED=0", "GOOS=linux"} {
		if !slices.Contains(g.env, want) {
			t.Errorf("%s: the build lacks %s (env %q)", g.in, want, g.env)
		}
	}
	if !slices.Contains(g.args, "-trimpath") || g.args[len(g.args)-1] != "./cmd/otopcua" {
		t.Errorf("%s: want -trimpath and ./cmd/otopcua last, got %q", g.in, g.args)
	}
	ld := ""
	if j := slices.Index(g.args, "-ldflags"); j >= 0 && j+1 < len(g.args) {
		ld = g.args[j+1]
	}
	for _, want := range []string{"-s", "-w", "-X main.version=" + dfBuildArgs["VERSION"], "-X main.commit=" + dfBuildArgs["COMMIT"]} {
		if !strings.Contains(" "+ld+" ", " "+want+" ") {
			t.Errorf("-ldflags %q lacks %q", ld, want)
		}
	}
	// Without --build-arg, the ARG defaults.
	plain, err := dfParse(dfRead(t, filepath.Join(procs.RepoRoot(), "Dockerfile")), nil)
	if err != nil {
		t.Fatal(err)
	}
	if v, c := plain.stage("build").Vars["VERSION"], plain.stage("build").Vars["COMMIT"]; v != "dev" || c != "unknown" {
		t.Errorf("ARG defaults VERSION=%q COMMIT=%q, want dev and unknown", v, c)
	}
}

func TestDockerfileFinalStage(t *testing.T) {
	df := dfLoad(t)
	g := dfFindGoBuild(t, df)
	final := df.final()

	user := final.only(t, "USER").Args
	uid, gid, _ := strings.Cut(user, ":")
	if n, err := strconv.Atoi(uid); err != nil || n == 0 || gid == "0" || gid == "root" {
		t.Errorf("USER %q: want a numeric non-root uid (and gid)", user)
	}
	// The user exists in the /etc/passwd the builder writes.
	passwd := "otopcua:x:" + user + ":"
	found := false
	for _, in := range g.stage.Body {
		found = found || in.Cmd == "RUN" && strings.Contains(in.Args, passwd) && strings.Contains(in.Args, "/etc/passwd")
	}
	if !found {
		t.Errorf("no RUN in the builder writes %q to an /etc/passwd", passwd)
	}

	if wd := final.only(t, "WORKDIR").Args; wd != dfDataDir {
		t.Errorf("WORKDIR %q, want %s", wd, dfDataDir)
	}
	vol := final.only(t, "VOLUME").JSON
	if !slices.Contains(vol, dfConfDir) || !slices.Contains(vol, dfDataDir) {
		t.Errorf("VOLUME %q, want the JSON form with %s and %s", vol, dfConfDir, dfDataDir)
	}

	// EXPOSE lists exactly the default OPC UA, cluster and HTTP ports.
	def := config.Default()
	want := []string{strconv.Itoa(def.OpcUa.Port), strconv.Itoa(def.Cluster.Port), strconv.Itoa(def.Http.Port)}
	if got := strings.Fields(final.only(t, "EXPOSE").Args); !slices.Equal(got, want) || !slices.Equal(want, []string{"4840", "4053", "8080"}) {
		t.Errorf("EXPOSE %q, want %q (OpcUa:Port, Cluster:Port, Http:Port defaults)", got, want)
	}

	// The binary the build writes is copied to the path ENTRYPOINT runs.
	entry := final.only(t, "ENTRYPOINT").JSON
	if len(entry) != 1 || entry[0] != dfBinary {
		t.Fatalf("ENTRYPOINT %q, want exec form [%q]", entry, dfBinary)
	}
	copied := false
	for _, in := range final.Body {
		if in.Cmd == "COPY" && df.stage(in.Flags["from"]) == g.stage && in.Args == g.out+" "+entry[0] {
			copied = true
		}
	}
	if !copied {
		t.Errorf("no COPY --from=%s %s %s in the final stage", g.stage.Name, g.out, entry[0])
	}
	for _, path := range []string{"/etc/ssl/certs/ca-certificates.crt", "/etc/passwd", "/etc/group", dfConfDir, dfDataDir} {
		if !dfFinalHas(df, path) {
			t.Errorf("the final stage copies nothing to %s", path)
		}
	}
	for _, dir := range []string{dfConfDir, dfDataDir} {
		for _, in := range final.Body {
			if in.Cmd == "COPY" && strings.HasSuffix(in.Args, " "+dir) && in.Flags["chown"] != user {
				t.Errorf("%s: want --chown=%s so that the node may write there", in, user)
			}
		}
	}

	if cmd := final.only(t, "CMD").JSON; !slices.Equal(cmd, []string{"host"}) {
		t.Errorf("CMD %q, want [\"host\"] (no --config: a missing --config file is an error)", cmd)
	}

	hc := final.only(t, "HEALTHCHECK")
	form, rest, _ := strings.Cut(hc.Args, " ")
	var probe []string
	if form == "CMD" {
		_ = json.Unmarshal([]byte(rest), &probe)
	}
	if !slices.Equal(probe, []string{dfBinary, "health"}) {
		t.Errorf("HEALTHCHECK %q, want CMD [%q, \"health\"] in exec form", hc.Args, dfBinary)
	}
	for flag, want := range map[string]string{"interval": "10s", "timeout": "3s", "start-period": "30s", "retries": "3"} {
		if hc.Flags[flag] != want {
			t.Errorf("HEALTHCHECK --%s=%q, want %s", flag, hc.Flags[flag], want)
		}
	}
	iv, _ := time.ParseDuration(hc.Flags["interval"])
	to, _ := time.ParseDuration(hc.Flags["timeout"])
	if to <= 0 || to >= iv {
		t.Errorf("HEALTHCHECK timeout %v must be above 0 and below the interval %v", to, iv)
	}
}

// dfFinalHas reports whether a COPY in the final stage writes path, as its
// destination or into a destination folder ending in "/".
func dfFinalHas(df *dfFile, path string) bool {
	for _, in := range df.final().Body {
		if in.Cmd != "COPY" {
			continue
		}
		f := strings.Fields(in.Args)
		dst := f[len(f)-1]
		if dst == path {
			return true
		}
		if strings.HasSuffix(dst, "/") {
			for _, src := range f[:len(f)-1] {
				if dst+filepath.Base(src) == path {
					return true
				}
			}
		}
	}
	return false
}

// TestDockerfileLabels: OCI annotation keys only, all of those named, the
// version and revision from the build arguments.
func TestDockerfileLabels(t *testing.T) {
	df := dfLoad(t)
	final := df.final()
	labels := map[string]string{}
	for _, in := range final.Body {
		if in.Cmd != "LABEL" {
			continue
		}
		for _, kv := range final.words(t, in) {
			k, v, ok := strings.Cut(kv, "=")
			if !ok || !strings.HasPrefix(k, "org.opencontainers.image.") {
				t.Errorf("%s: label %q is not an org.opencontainers.image.* key=value", in, kv)
			}
			labels[k] = v
		}
	}
	for _, key := range []string{"title", "description", "source", "licenses", "version", "revision", "vendor"} {
		if labels["org.opencontainers.image."+key] == "" {
			t.Errorf("no org.opencontainers.image.%s label", key)
		}
	}
	if v, r := labels["org.opencontainers.image.version"], labels["org.opencontainers.image.revision"]; v != dfBuildArgs["VERSION"] || r != dfBuildArgs["COMMIT"] {
		t.Errorf("version %q revision %q, want the build arguments %v", v, r, dfBuildArgs)
	}
}

// TestDockerfileEnvironment loads the image's ENV as otopcua would: the
// keys exist and the LocalDb lands in the data volume.
func TestDockerfileEnvironment(t *testing.T) {
	df := dfLoad(t)
	final := df.final()
	var env []string
	for _, in := range final.Body {
		if in.Cmd == "ENV" {
			env = append(env, final.words(t, in)...)
		}
	}
	for _, kv := range env {
		if !strings.Contains(kv, "=") || !strings.HasPrefix(kv, config.EnvPrefix) {
			t.Errorf("ENV %q: want OTOPCUA_…=value", kv)
		}
	}
	cfg, err := config.Load("", env)
	if err != nil {
		t.Fatalf("the image's environment %q does not load: %v", env, err)
	}
	if cfg.LocalDb.Path != dfDataDir+"/otopcua-local.db" {
		t.Errorf("LocalDb:Path %q, want it in %s", cfg.LocalDb.Path, dfDataDir)
	}
	if cfg.Telemetry.LogFormat != "json" {
		t.Errorf("Telemetry:LogFormat %q, want json", cfg.Telemetry.LogFormat)
	}
}

func TestDockerignore(t *testing.T) {
	ign := dfParseIgnore(dfRead(t, filepath.Join(procs.RepoRoot(), ".dockerignore")))
	for _, p := range []string{".git", ".git/objects/pack/x.pack", "tests/interop/node_modules/node-opcua/package.json",
		"node_modules/x", "cmd/otopcua/otopcua.test", "cover.out", "tests/x/cpu.prof", "otopcua"} {
		if !ign.Excludes(p) {
			t.Errorf(".dockerignore lets %s into the build context", p)
		}
	}
	// What the build needs stays.
	for _, p := range []string{"go.mod", "go.sum", "cmd/otopcua/main.go", "opcua/addrspace/ns0.bin.gz", "internal/ports/ports.go"} {
		if ign.Excludes(p) {
			t.Errorf(".dockerignore leaves out %s, which the build needs", p)
		}
	}
}

// TestDockerfileBuildIsStatic runs the Dockerfile's own go build line
// (its environment and flags, the ARGs substituted) into a temporary
// folder: the binary must be statically linked, and `version` must print
// the injected version and commit.
func TestDockerfileBuildIsStatic(t *testing.T) {
	df := dfLoad(t)
	g := dfFindGoBuild(t, df)
	bin := filepath.Join(t.TempDir(), "otopcua")
	args := slices.Clone(g.args)
	args[slices.Index(args, "-o")+1] = bin
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(goTool, args...)
	cmd.Dir = procs.RepoRoot()
	cmd.Env = append(os.Environ(), g.env...)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%s %q: %v\n%s", strings.Join(g.env, " "), args, err, out)
	}

	f, err := elf.Open(bin)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			t.Error("the binary has a PT_INTERP program header: it is dynamically linked")
		}
	}
	libs, err := f.ImportedLibraries()
	if err != nil {
		t.Fatal(err)
	}
	if len(libs) > 0 {
		t.Errorf("the binary needs shared libraries (DT_NEEDED): %q", libs)
	}
	if f.Section(".symtab") != nil {
		t.Error("the binary has a symbol table: -ldflags -s did not apply")
	}

	out, err := exec.Command(bin, "version").CombinedOutput()
	want := "otopcua " + dfBuildArgs["VERSION"] + " (commit " + dfBuildArgs["COMMIT"] + ", "
	if err != nil || !strings.HasPrefix(string(out), want) {
		t.Fatalf("version: %v, output %q; want it to start with %q", err, out, want)
	}
}

func dfRead(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
