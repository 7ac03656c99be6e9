package localdb

import (
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// savedFile is a closed LocalDb file in dir holding version 1 of site-a.
func savedFile(t *testing.T, dir string) string {
	t.Helper()
	path := filepath.Join(dir, DefaultPath)
	db, err := Open(ctxT(t), path, nil)
	if err != nil {
		t.Fatal(err)
	}
	saveT(t, db, "site-a", 1, docOf(1, 3*ChunkSize))
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	return path
}

// chmod 0400 as root: root's CAP_DAC_OVERRIDE ignores the mode bits, so
// the file is still written. As any other user (run below as nobody) the
// save fails with an error that says what to fix, and the cache still
// loads — the node can boot from it.
func TestReadOnlyFile(t *testing.T) {
	path := savedFile(t, t.TempDir())
	if err := os.Chmod(path, 0o400); err != nil {
		t.Fatal(err)
	}
	r := probe(ctxT(t), path)
	if os.Geteuid() == 0 {
		if r.Open != "ok" || r.Load != "ok" || r.Version != 1 || r.Save != "ok" {
			t.Fatalf("as root on a 0400 file: %+v, want open, load of version 1 and save all to work (root ignores mode bits)", r)
		}
		t.Run("as nobody", testReadOnlyAsNobody)
		return
	}
	wantReadOnly(t, r, path)
}

func wantReadOnly(t *testing.T, r probeResult, path string) {
	t.Helper()
	t.Logf("SaveArtifact said: %s", r.Save)
	if r.Open != "ok" || r.Load != "ok" || r.Version != 1 {
		t.Fatalf("read-only file: %+v, want Open to work and LoadArtifact to give version 1", r)
	}
	for _, want := range []string{path, "cannot be written", "readonly", "give the otopcua user write access"} {
		if !strings.Contains(r.Save, want) {
			t.Fatalf("SaveArtifact on a read-only file said %q, want it to say %q", r.Save, want)
		}
	}
}

const nobody = 65534

// testReadOnlyAsNobody runs the probe as the unprivileged user nobody,
// from a copy of the test binary that nobody can execute, against files
// set up the way an operator could leave them.
func testReadOnlyAsNobody(t *testing.T) {
	base, err := os.MkdirTemp("", "localdb-nobody-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(base) })
	if err := os.Chmod(base, 0o755); err != nil {
		t.Fatal(err)
	}
	exe := filepath.Join(base, "localdb.test")
	copyFile(t, testExe(t), exe, 0o755)
	// mkdir makes a directory under base, owned by uid with mode.
	mkdir := func(name string, uid int, mode os.FileMode) string {
		d := filepath.Join(base, name)
		if err := os.Mkdir(d, 0o700); err != nil {
			t.Fatal(err)
		}
		chown(t, d, uid, mode)
		return d
	}
	run := func(path string) probeResult {
		cmd := helper(t, exe, "probe", path)
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: nobody, Gid: nobody}}
		cmd.Dir = base
		return runProbe(t, cmd)
	}

	t.Run("0400 file of nobody in nobody's directory", func(t *testing.T) {
		path := savedFile(t, mkdir("own", nobody, 0o755))
		chown(t, path, nobody, 0o400)
		wantReadOnly(t, run(path), path)
	})
	t.Run("0400 file of nobody in root's read-only directory", func(t *testing.T) {
		// SQLite cannot create the -shm file beside a WAL database here;
		// Open then reads the file as immutable (there is no -wal file).
		path := savedFile(t, mkdir("rootdir", 0, 0o755))
		chown(t, path, nobody, 0o400)
		wantReadOnly(t, run(path), path)
	})
	t.Run("0400 file with a write-ahead log in root's read-only directory", func(t *testing.T) {
		// The file as a process left it that was killed after saving:
		// version 2 lives only in the -wal. Reading the main file alone
		// would give version 1, so Open refuses instead.
		dir := mkdir("withwal", 0, 0o755)
		live := savedFile(t, t.TempDir())
		db := openT(t, live)
		saveT(t, db, "site-a", 2, docOf(2, 1000))
		path := filepath.Join(dir, DefaultPath)
		copyFile(t, live, path, 0o400)
		copyFile(t, live+"-wal", path+"-wal", 0o400)
		chown(t, path, nobody, 0o400)
		chown(t, path+"-wal", nobody, 0o400)
		r := run(path)
		for _, want := range []string{path, "unable to open database file", "give the otopcua user read and write access"} {
			if !strings.Contains(r.Open, want) {
				t.Fatalf("Open said %q, want it to say %q", r.Open, want)
			}
		}
		// With write access to the directory it recovers version 2.
		chown(t, dir, nobody, 0o755)
		if r := run(path); r.Load != "ok" || r.Version != 2 {
			t.Fatalf("after giving nobody the directory: %+v, want version 2 loaded", r)
		}
	})
	t.Run("root's 0600 file", func(t *testing.T) {
		path := savedFile(t, mkdir("unreadable", nobody, 0o755))
		chown(t, path, 0, 0o600)
		r := run(path)
		for _, want := range []string{path, "cannot be read", "permission denied", "give the otopcua user read and write access"} {
			if !strings.Contains(r.Open, want) {
				t.Fatalf("Open of an unreadable file said %q, want it to say %q", r.Open, want)
			}
		}
	})
	t.Run("root's 0700 directory", func(t *testing.T) {
		path := savedFile(t, mkdir("closed", 0, 0o700))
		r := run(path)
		for _, want := range []string{path, "permission denied", "give the otopcua user access"} {
			if !strings.Contains(r.Open, want) {
				t.Fatalf("Open in a closed directory said %q, want it to say %q", r.Open, want)
			}
		}
	})
	t.Run("a new file in root's read-only directory", func(t *testing.T) {
		path := filepath.Join(mkdir("nocreate", 0, 0o755), DefaultPath)
		r := run(path)
		for _, want := range []string{path, "give the otopcua user read and write access"} {
			if !strings.Contains(r.Open, want) {
				t.Fatalf("Open of a file that cannot be created said %q, want it to say %q", r.Open, want)
			}
		}
	})
}

func chown(t *testing.T, path string, uid int, mode os.FileMode) {
	t.Helper()
	if err := os.Chown(path, uid, uid); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(path, mode); err != nil {
		t.Fatal(err)
	}
}

func copyFile(t *testing.T, from, to string, mode os.FileMode) {
	t.Helper()
	src, err := os.Open(from)
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	dst, err := os.OpenFile(to, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, mode)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(dst, src); err != nil {
		t.Fatal(err)
	}
	if err := dst.Close(); err != nil {
		t.Fatal(err)
	}
}
