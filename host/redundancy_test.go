package host

import (
	"context"
	"database/sql"
	"errors"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/otopcua/otopcua/config"
	"github.com/otopcua/otopcua/configdb"
)

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
