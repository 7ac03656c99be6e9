package pg

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"sort"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// Database is the database Start creates; DSN points at it.
const Database = "otopcua"

// superuser is the role initdb creates (trust authentication, no password).
const superuser = "postgres"

// startTimeout bounds initdb, a start and a stop.
const startTimeout = 60 * time.Second

// Server is one PostgreSQL server owned by a test. Its methods must be
// called from the test's goroutine (or one at a time); they fail the test
// on error.
type Server struct {
	t       testing.TB
	bin     string // directory of initdb and postgres
	root    string // temporary directory owned by the server's OS user
	dataDir string
	logPath string
	port    int
	cred    *syscall.Credential // nil: run as the current user

	mu      sync.Mutex // guards cmd and exited
	cmd     *exec.Cmd
	exited  chan struct{} // closed when cmd has been waited for
	waitErr error
}

// Start initialises a cluster in a new temporary directory, starts
// PostgreSQL on 127.0.0.1 at a free port with trust authentication, creates
// the database Database and registers a cleanup that kills the server and
// removes the directory. It fails the test, naming the Debian package, when
// PostgreSQL is not installed.
func Start(t testing.TB) *Server {
	t.Helper()
	bin, err := BinDir()
	if err != nil {
		t.Fatal(err)
	}
	s := &Server{t: t, bin: bin}
	s.cred, err = serverCredential()
	if err != nil {
		t.Fatal(err)
	}
	s.root, err = os.MkdirTemp("", "otopcua-pg-")
	if err != nil {
		t.Fatalf("pg: temporary directory: %v", err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(s.root) })
	if s.cred != nil {
		if err := os.Chown(s.root, int(s.cred.Uid), int(s.cred.Gid)); err != nil {
			t.Fatalf("pg: hand %s to uid %d: %v", s.root, s.cred.Uid, err)
		}
	}
	s.dataDir = filepath.Join(s.root, "data")
	s.logPath = filepath.Join(s.root, "postgres.log")
	t.Cleanup(s.cleanup) // runs before the directory removal above

	s.initdb()
	// A free port can be taken between choosing and binding it: retry
	// with another one a few times.
	for attempt := 1; ; attempt++ {
		s.port = freePort(t)
		err := s.start()
		if err == nil {
			break
		}
		if attempt == 3 {
			t.Fatalf("pg: start: %v", err)
		}
		t.Logf("pg: start on port %d failed (%v), trying another port", s.port, err)
	}
	s.CreateDatabase(Database)
	return s
}

// BinDir finds the directory holding initdb and postgres: the newest
// /usr/lib/postgresql/<version>/bin (Debian's layout), else the directory
// of an initdb on PATH.
func BinDir() (string, error) {
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	sort.Slice(dirs, func(i, j int) bool { return pgVersion(dirs[i]) > pgVersion(dirs[j]) })
	for _, d := range dirs {
		if isExecutable(filepath.Join(d, "initdb")) && isExecutable(filepath.Join(d, "postgres")) {
			return d, nil
		}
	}
	if p, err := exec.LookPath("initdb"); err == nil {
		d := filepath.Dir(p)
		if isExecutable(filepath.Join(d, "postgres")) {
			return d, nil
		}
	}
	return "", errors.New("pg: PostgreSQL server binaries (initdb, postgres) not found in /usr/lib/postgresql/*/bin or on PATH: " +
		"install the Debian package postgresql (apt-get install postgresql; scripts/test.sh installs it when run as root)")
}

// DSN is a pgx/libpq URL for the database Database on this server.
func (s *Server) DSN() string { return s.DSNFor(Database) }

// DSNFor is a pgx/libpq URL for database db on this server.
func (s *Server) DSNFor(db string) string {
	return fmt.Sprintf("postgres://%s@127.0.0.1:%d/%s?sslmode=disable", superuser, s.port, db)
}

// CreateDatabase creates an empty database (name: lower-case letters,
// digits and '_') and returns its DSN, so tests can share one server.
func (s *Server) CreateDatabase(name string) string {
	s.t.Helper()
	for _, r := range name {
		if !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '_') {
			s.t.Fatalf("pg: database name %q: use lower-case letters, digits and '_'", name)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), startTimeout)
	defer cancel()
	if err := s.query(ctx, "postgres", "CREATE DATABASE "+name); err != nil {
		s.t.Fatalf("pg: create database %s: %v", name, err)
	}
	return s.DSNFor(name)
}

// Port is the TCP port the server listens on (the same across restarts).
func (s *Server) Port() int { return s.port }

// Addr is 127.0.0.1:port.
func (s *Server) Addr() string { return net.JoinHostPort("127.0.0.1", strconv.Itoa(s.port)) }

// LogPath is the server's log file (kept until the test ends).
func (s *Server) LogPath() string { return s.logPath }

// Running reports whether the server process is alive.
func (s *Server) Running() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.exited == nil {
		return false
	}
	select {
	case <-s.exited:
		return false
	default:
		return true
	}
}

// Stop shuts the server down the "fast" way (SIGINT: open sessions are
// terminated, clients see their connections closed) and waits until the
// process has exited — a Config DB outage as clients see it. The port is
// closed afterwards: new connections are refused.
func (s *Server) Stop() {
	s.t.Helper()
	if err := s.signal(syscall.SIGINT, false); err != nil {
		s.t.Fatalf("pg: stop: %v", err)
	}
	if err := s.wait(startTimeout); err != nil {
		s.t.Fatalf("pg: stop: %v\n%s", err, s.logTail())
	}
}

// Kill ends the server and all its processes with SIGKILL (a crash: no
// shutdown checkpoint; the next Start runs crash recovery) and waits until
// they are gone.
func (s *Server) Kill() {
	s.t.Helper()
	if err := s.signal(syscall.SIGKILL, true); err != nil {
		s.t.Fatalf("pg: kill: %v", err)
	}
	if err := s.wait(startTimeout); err != nil {
		s.t.Fatalf("pg: kill: %v", err)
	}
}

// Freeze stops every server process with SIGSTOP: connections stay open and
// new TCP connections are accepted by the kernel, but nothing answers — a
// hung database. Thaw resumes it.
func (s *Server) Freeze() {
	s.t.Helper()
	if err := s.signal(syscall.SIGSTOP, true); err != nil {
		s.t.Fatalf("pg: freeze: %v", err)
	}
}

// Thaw resumes a frozen server (SIGCONT).
func (s *Server) Thaw() {
	s.t.Helper()
	if err := s.signal(syscall.SIGCONT, true); err != nil {
		s.t.Fatalf("pg: thaw: %v", err)
	}
}

// Start starts a stopped or killed server again on the same port and data
// directory and waits until it accepts queries.
func (s *Server) Start() {
	s.t.Helper()
	if s.Running() {
		s.t.Fatal("pg: Start: the server is already running")
	}
	if err := s.start(); err != nil {
		s.t.Fatalf("pg: restart on port %d: %v", s.port, err)
	}
}

func (s *Server) initdb() {
	s.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), startTimeout)
	defer cancel()
	cmd := s.command(ctx, filepath.Join(s.bin, "initdb"),
		"-D", s.dataDir, "-U", superuser, "-A", "trust", "-E", "UTF8", "--no-locale", "--no-sync")
	out, err := cmd.CombinedOutput()
	if err != nil {
		s.t.Fatalf("pg: initdb: %v\n%s", err, out)
	}
}

// start launches postgres and waits until it answers a query, or fails with
// the log when it exits first or does not answer in startTimeout.
func (s *Server) start() error {
	logf, err := os.OpenFile(s.logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return fmt.Errorf("log file: %w", err)
	}
	defer logf.Close()
	cmd := s.command(context.Background(), filepath.Join(s.bin, "postgres"),
		"-D", s.dataDir,
		"-p", strconv.Itoa(s.port),
		"-c", "listen_addresses=127.0.0.1",
		"-c", "unix_socket_directories=",
		"-c", "fsync=off", // tests only: the OS page cache survives a process kill
		"-c", "full_page_writes=off",
		"-c", "shared_buffers=16MB",
		"-c", "max_connections=40",
		"-c", "log_min_messages=warning",
	)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr.Setpgid = true // keep terminal signals meant for the test away from it
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start %s: %w", cmd.Path, err)
	}
	exited := make(chan struct{})
	s.mu.Lock()
	s.cmd, s.exited, s.waitErr = cmd, exited, nil
	s.mu.Unlock()
	go func() {
		err := cmd.Wait()
		s.mu.Lock()
		s.waitErr = err
		s.mu.Unlock()
		close(exited)
	}()

	deadline := time.Now().Add(startTimeout)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		err := s.query(ctx, "postgres", "SELECT 1")
		cancel()
		if err == nil {
			return nil
		}
		select {
		case <-exited:
			return fmt.Errorf("postgres exited during start-up (%v):\n%s", s.exitErr(), s.logTail())
		default:
		}
		if time.Now().After(deadline) {
			_ = s.signal(syscall.SIGKILL, true)
			return fmt.Errorf("postgres did not answer within %s (last error: %v):\n%s", startTimeout, err, s.logTail())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// query runs one statement in database db over a fresh connection.
func (s *Server) query(ctx context.Context, db, stmt string) error {
	conn, err := pgx.Connect(ctx, s.DSNFor(db))
	if err != nil {
		return err
	}
	defer conn.Close(context.Background())
	_, err = conn.Exec(ctx, stmt)
	return err
}

// signal sends sig to the postmaster, or to the postmaster and every
// process it started. PostgreSQL puts each backend in its own session, so
// a process-group signal would miss them: the children are found in /proc.
// The postmaster is stopped first, so it forks no new child meanwhile, and
// for SIGKILL the call waits until the children have exited (zombies left
// to an init that does not reap count as exited: they hold no memory).
func (s *Server) signal(sig syscall.Signal, all bool) error {
	s.mu.Lock()
	cmd, exited := s.cmd, s.exited
	s.mu.Unlock()
	if cmd == nil {
		return errors.New("the server was never started")
	}
	select {
	case <-exited:
		return errors.New("the server is not running")
	default:
	}
	pm := cmd.Process.Pid
	if !all {
		return kill(pm, sig)
	}
	if sig != syscall.SIGCONT {
		if err := kill(pm, syscall.SIGSTOP); err != nil {
			return err
		}
	}
	kids := children(pm)
	for _, pid := range kids {
		_ = kill(pid, sig) // a backend may have exited meanwhile
	}
	if err := kill(pm, sig); err != nil {
		return err
	}
	if sig != syscall.SIGKILL {
		return nil
	}
	deadline := time.Now().Add(10 * time.Second)
	for _, pid := range kids {
		for alive(pid) {
			if time.Now().After(deadline) {
				return fmt.Errorf("backend %d still alive 10s after SIGKILL", pid)
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	return nil
}

func kill(pid int, sig syscall.Signal) error {
	if err := syscall.Kill(pid, sig); err != nil {
		return fmt.Errorf("signal %v to %d: %w", sig, pid, err)
	}
	return nil
}

// children lists the processes whose parent is pid, from /proc/<n>/stat.
func children(pid int) []int {
	entries, _ := os.ReadDir("/proc")
	var out []int
	for _, e := range entries {
		n, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if ppid, _, ok := procStat(n); ok && ppid == pid {
			out = append(out, n)
		}
	}
	return out
}

// alive reports whether pid exists and is not a zombie.
func alive(pid int) bool {
	_, state, ok := procStat(pid)
	return ok && state != 'Z' && state != 'X'
}

// procStat reads the parent pid and state of pid from /proc/<pid>/stat
// ("pid (comm) state ppid …"; comm may hold spaces and parentheses).
func procStat(pid int) (ppid int, state byte, ok bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, 0, false
	}
	i := bytes.LastIndexByte(b, ')')
	if i < 0 || i+2 >= len(b) {
		return 0, 0, false
	}
	f := bytes.Fields(b[i+1:])
	if len(f) < 2 || len(f[0]) != 1 {
		return 0, 0, false
	}
	ppid, err = strconv.Atoi(string(f[1]))
	return ppid, f[0][0], err == nil
}

// wait waits for the postmaster to exit (after a fast shutdown it has
// waited for its backends itself).
func (s *Server) wait(d time.Duration) error {
	s.mu.Lock()
	exited := s.exited
	s.mu.Unlock()
	select {
	case <-exited:
		return nil
	case <-time.After(d):
		return fmt.Errorf("postgres still running after %s", d)
	}
}

func (s *Server) exitErr() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.waitErr
}

func (s *Server) cleanup() {
	if s.Running() {
		_ = s.signal(syscall.SIGCONT, true) // in case the test left it frozen
		_ = s.signal(syscall.SIGKILL, true)
		_ = s.wait(startTimeout)
	}
}

// command builds a command that runs as the server's OS user in s.root.
func (s *Server) command(ctx context.Context, path string, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, path, args...)
	cmd.Dir = s.root
	cmd.Env = []string{"LC_ALL=C", "LANG=C", "PATH=/usr/bin:/bin", "HOME=" + s.root}
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: s.cred}
	return cmd
}

// logTail returns the end of the server log for failure messages.
func (s *Server) logTail() string {
	b, err := os.ReadFile(s.logPath)
	if err != nil {
		return "(no log: " + err.Error() + ")"
	}
	const max = 4000
	if len(b) > max {
		b = b[len(b)-max:]
	}
	return string(b)
}

// serverCredential picks the OS user PostgreSQL runs as: itself when not
// root (PostgreSQL refuses to run as root), else the "postgres" user that
// Debian's package creates, else "nobody".
func serverCredential() (*syscall.Credential, error) {
	if os.Geteuid() != 0 {
		return nil, nil
	}
	for _, name := range []string{"postgres", "nobody"} {
		u, err := user.Lookup(name)
		if err != nil {
			continue
		}
		uid, err1 := strconv.ParseUint(u.Uid, 10, 32)
		gid, err2 := strconv.ParseUint(u.Gid, 10, 32)
		if err1 != nil || err2 != nil {
			continue
		}
		return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid), NoSetGroups: true}, nil
	}
	return nil, errors.New("pg: running as root and neither a postgres nor a nobody user exists: PostgreSQL refuses to run as root " +
		"(the Debian package postgresql creates the postgres user)")
}

func freePort(t testing.TB) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("pg: pick a free port: %v", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// pgVersion is the major version in /usr/lib/postgresql/<version>/bin.
func pgVersion(binDir string) int {
	v, _ := strconv.Atoi(filepath.Base(filepath.Dir(binDir)))
	return v
}

func isExecutable(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && !fi.IsDir() && fi.Mode()&0o111 != 0
}
