package host

import (
	"context"
	"database/sql"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/otopcua/otopcua/config"
	"github.com/otopcua/otopcua/configdb"
	"github.com/otopcua/otopcua/telemetry"
)

type recorder struct {
	mu  sync.Mutex
	got []byte
}

func (r *recorder) Publish(l byte) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.got = append(r.got, l)
}

func (r *recorder) all() []byte {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.got)
}

func TestLevelSwitchRuntimeOwnsLevelWithoutHooks(t *testing.T) {
	rec := &recorder{}
	s := newLevelSwitch(newLevelPublisher(rec, telemetry.NopMetrics(), slog.New(slog.DiscardHandler)), false)
	for _, l := range []byte{0, 0, 240, 250, 250} {
		s.Publish(l)
	}
	if got := rec.all(); !slices.Equal(got, []byte{0, 240, 250}) {
		t.Fatalf("server got %v, want [0 240 250] (repeats suppressed)", got)
	}
}

func TestLevelSwitchTestHook(t *testing.T) {
	rec := &recorder{}
	s := newLevelSwitch(newLevelPublisher(rec, telemetry.NopMetrics(), slog.New(slog.DiscardHandler)), true)
	h := s.debugHandler()
	post := func(q string) (int, string) {
		w := httptest.NewRecorder()
		h.ServeHTTP(w, httptest.NewRequest(http.MethodPost, "/debug/service-level?level="+q, nil))
		return w.Code, w.Body.String()
	}
	// The hook owns the level from start-up: runtime levels wait.
	s.Publish(250)
	if got := rec.all(); len(got) != 0 {
		t.Fatalf("runtime level reached the server while the hook owns it: %v", got)
	}
	if code, _ := post("240"); code != http.StatusOK {
		t.Fatalf("level=240: %d", code)
	}
	s.Publish(200)
	if got := rec.all(); !slices.Equal(got, []byte{240}) {
		t.Fatalf("server got %v, want [240]", got)
	}
	for _, bad := range []string{"256", "-1", "x", ""} {
		if code, body := post(bad); code != http.StatusBadRequest || !strings.Contains(body, "runtime") {
			t.Fatalf("level=%q: %d %q", bad, code, body)
		}
	}
	// Back to the runtime: its latest level at once, then every change.
	if code, body := post("runtime"); code != http.StatusOK || !strings.Contains(body, "200") {
		t.Fatalf("level=runtime: %d %q", code, body)
	}
	s.Publish(250)
	if got := rec.all(); !slices.Equal(got, []byte{240, 200, 250}) {
		t.Fatalf("server got %v, want [240 200 250]", got)
	}
}

func TestOpenConfigDbDefaultSQLiteInWorkingDirectory(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	cfg := config.Default()
	if cfg.ConfigDb.Provider != config.ProviderSQLite || cfg.ConfigDb.ConnectionString != "file:otopcua.db" {
		t.Fatalf("defaults changed: %+v", cfg.ConfigDb)
	}
	db, closeDb, err := openConfigDb(context.Background(), cfg, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := db.Ping(ctx); err != nil {
		t.Fatal(err)
	}
	if v, err := db.Version(ctx); err != nil || v != configdb.SchemaVersion {
		t.Fatalf("schema version %d, %v; want %d", v, err, configdb.SchemaVersion)
	}
	closeDb()
	if _, err := os.Stat(filepath.Join(dir, "otopcua.db")); err != nil {
		t.Fatalf("the default Config DB is not in the working directory: %v", err)
	}
}

func TestOpenConfigDbRefusesNewerSchemaAndBadProvider(t *testing.T) {
	path := filepath.Join(t.TempDir(), "c.db")
	cfg := config.Default()
	cfg.ConfigDb.ConnectionString = "file:" + path
	_, closeDb, err := openConfigDb(context.Background(), cfg, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	closeDb()
	raw, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := raw.Exec("INSERT INTO schema_version (version, name, applied_at) VALUES (9999, 'from the future', '2030-01-01 00:00:00')"); err != nil {
		t.Fatal(err)
	}
	raw.Close()
	if _, _, err := openConfigDb(context.Background(), cfg, slog.New(slog.DiscardHandler)); !errors.Is(err, configdb.ErrSchemaNewer) {
		t.Fatalf("a newer schema did not stop start-up: %v", err)
	}

	cfg.ConfigDb.Provider = "oracle"
	if _, _, err := openConfigDb(context.Background(), cfg, slog.New(slog.DiscardHandler)); err == nil || !strings.Contains(err.Error(), "ConfigDb:Provider") {
		t.Fatalf("a bad provider: %v", err)
	}
}

// TestOpenConfigDbOutageDoesNotStopStartUp: a networked Config DB that is
// down at start-up leaves the node running (migration retried in the
// background; the DB probe reports the outage).
func TestOpenConfigDbOutageDoesNotStopStartUp(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	cfg := config.Default()
	cfg.ConfigDb.Provider = config.ProviderPostgres
	cfg.ConfigDb.ConnectionString = "postgres://otopcua@" + addr + "/otopcua?sslmode=disable&connect_timeout=1"
	start := time.Now()
	db, closeDb, err := openConfigDb(context.Background(), cfg, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatalf("a Config DB outage stopped start-up: %v", err)
	}
	if d := time.Since(start); d > 3*time.Second {
		t.Fatalf("start-up waited %v for a refused Config DB", d)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if db.Ping(ctx) == nil {
		t.Fatal("Ping of a closed port succeeded")
	}
	closeDb()
}
