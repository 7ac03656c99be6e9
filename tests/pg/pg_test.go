package pg

import (
	"context"
	"errors"
	"net"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

func connect(ctx context.Context, t *testing.T, s *Server) (*pgx.Conn, error) {
	t.Helper()
	return pgx.Connect(ctx, s.DSN())
}

func run(t *testing.T, s *Server, stmt string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := connect(ctx, t, s)
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	defer c.Close(context.Background())
	if _, err := c.Exec(ctx, stmt); err != nil {
		t.Fatalf("%s: %v", stmt, err)
	}
}

func count(t *testing.T, s *Server) int {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := connect(ctx, t, s)
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	defer c.Close(context.Background())
	var n int
	if err := c.QueryRow(ctx, "SELECT COUNT(*) FROM marks").Scan(&n); err != nil {
		t.Fatalf("count: %v", err)
	}
	return n
}

// refused reports whether a TCP connection to the server's port is refused.
func refused(s *Server) bool {
	c, err := net.DialTimeout("tcp", s.Addr(), time.Second)
	if err == nil {
		c.Close()
		return false
	}
	return true
}

func TestStopStartKillKeepsDataAndPort(t *testing.T) {
	s := Start(t)
	if !s.Running() {
		t.Fatal("Running() = false after Start")
	}
	port, dsn := s.Port(), s.DSN()
	run(t, s, "CREATE TABLE marks (n INT)")
	run(t, s, "INSERT INTO marks VALUES (1)")

	// An open session sees its connection closed by the fast shutdown.
	ctx := context.Background()
	held, err := connect(ctx, t, s)
	if err != nil {
		t.Fatal(err)
	}
	defer held.Close(context.Background())

	s.Stop()
	if s.Running() {
		t.Fatal("Running() = true after Stop")
	}
	if !refused(s) {
		t.Fatal("the port still accepts connections after Stop")
	}
	if _, err := held.Exec(ctx, "SELECT 1"); err == nil {
		t.Fatal("a session opened before Stop still answers after it")
	}

	s.Start()
	if s.Port() != port || s.DSN() != dsn {
		t.Fatalf("restart moved the server: port %d→%d, DSN %s→%s", port, s.Port(), dsn, s.DSN())
	}
	if n := count(t, s); n != 1 {
		t.Fatalf("rows after Stop/Start = %d, want 1", n)
	}

	run(t, s, "INSERT INTO marks VALUES (2)")
	s.Kill()
	if !refused(s) {
		t.Fatal("the port still accepts connections after Kill")
	}
	s.Start() // crash recovery
	if n := count(t, s); n != 2 {
		t.Fatalf("rows after Kill/Start = %d, want 2 (a committed row was lost)", n)
	}
}

func TestFreezeHangsQueriesUntilThaw(t *testing.T) {
	s := Start(t)
	bg := context.Background()
	held, err := connect(bg, t, s) // a session opened before the freeze
	if err != nil {
		t.Fatal(err)
	}
	defer held.Close(bg)
	s.Freeze()

	ctx, cancel := context.WithTimeout(bg, 500*time.Millisecond)
	_, err = held.Exec(ctx, "SELECT 1")
	cancel()
	if err == nil {
		t.Fatal("an open session answered while the server was frozen")
	}

	ctx, cancel = context.WithTimeout(bg, 500*time.Millisecond)
	_, err = connect(ctx, t, s)
	cancel()
	if err == nil {
		t.Fatal("connected to a frozen server")
	}
	if !errors.Is(err, context.DeadlineExceeded) {
		// The kernel still accepts the TCP connection: the client must be
		// stuck waiting for an answer, not refused.
		t.Fatalf("connect to a frozen server: %v, want a deadline error", err)
	}
	s.Thaw()
	run(t, s, "SELECT 1")
}

func TestCleanupRemovesDirectoryAndServer(t *testing.T) {
	var root string
	var port int
	t.Run("inner", func(t *testing.T) {
		s := Start(t)
		root, port = s.root, s.Port()
		s.Freeze() // cleanup must cope with a frozen server
	})
	if _, err := os.Stat(root); !os.IsNotExist(err) {
		t.Fatalf("directory %s still there after the test (stat: %v)", root, err)
	}
	c, err := net.DialTimeout("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)), time.Second)
	if err == nil {
		c.Close()
		t.Fatalf("port %d still accepts connections after the test", port)
	}
}

func TestBinDirFindsTheServer(t *testing.T) {
	d, err := BinDir()
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"initdb", "postgres"} {
		if !isExecutable(d + "/" + name) {
			t.Fatalf("%s/%s is not executable", d, name)
		}
	}
}

func TestCreateDatabase(t *testing.T) {
	s := Start(t)
	dsn := s.CreateDatabase("second_db")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(context.Background())
	var name string
	if err := c.QueryRow(ctx, "SELECT current_database()").Scan(&name); err != nil || name != "second_db" {
		t.Fatalf("current_database() = %q, %v", name, err)
	}
}
