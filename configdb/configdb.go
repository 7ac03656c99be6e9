package configdb

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/jonboulle/clockwork"

	_ "github.com/jackc/pgx/v5/stdlib"  // database/sql driver "pgx"
	_ "github.com/microsoft/go-mssqldb" // database/sql driver "sqlserver"
	_ "modernc.org/sqlite"              // database/sql driver "sqlite"
)

// Sentinel errors callers branch on.
var (
	// ErrUnknownProvider is wrapped by Open for a provider other than
	// sqlite, postgres and sqlserver.
	ErrUnknownProvider = errors.New("configdb: unknown ConfigDb:Provider")
	// ErrBadConnectionString is wrapped by Open when the connection string
	// cannot be used by the provider's driver.
	ErrBadConnectionString = errors.New("configdb: bad ConfigDb:ConnectionString")
	// ErrSchemaNewer is wrapped by Migrate when the database was migrated
	// by a newer otopcua than this one.
	ErrSchemaNewer = errors.New("configdb: database schema is newer than this otopcua")
	// ErrInvalid is wrapped when a value handed to a helper is malformed.
	ErrInvalid = errors.New("configdb: invalid value")
	// ErrUnknownCluster is wrapped when a row refers to a cluster id that
	// has no clusters row.
	ErrUnknownCluster = errors.New("configdb: unknown cluster")
	// ErrNotFound is wrapped when a looked-up row does not exist.
	ErrNotFound = errors.New("configdb: not found")
)

// DB is an open Config DB. It is safe for concurrent use.
type DB struct {
	sql   *sql.DB
	d     *dialect
	q     *queries
	clock clockwork.Clock
	// noAlarmKey is WithoutAlarmHistoryKey.
	noAlarmKey bool
}

// Option adjusts Open.
type Option func(*DB)

// WithClock sets the clock that stamps created_at, updated_at and audit
// times. Default: the real clock.
func WithClock(c clockwork.Clock) Option {
	return func(db *DB) { db.clock = c }
}

// WithoutAlarmHistoryKey is a test-only mutation (internal/mutation's
// historian-duplicates): Migrate drops alarm_history's idempotency key
// (PostgreSQL only) and the historian's inserts no longer skip a row whose
// key is stored, so a transition drained twice is stored twice. It exists
// so that the chaos run can show its checker catching that; never in
// production.
func WithoutAlarmHistoryKey() Option {
	return func(db *DB) {
		db.noAlarmKey = true
		db.q.insertAlarmHistory = db.d.bind("INSERT INTO alarm_history (" + alarmHistoryInsertCols + ", inserted_at) VALUES (" +
			"$1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, " + db.d.dbNow + ")")
	}
}

// Open prepares the Config DB of provider ("sqlite", "postgres" or
// "sqlserver", case-insensitive) at connectionString.
//
// sqlite opens (and creates) the file at once and fails when it cannot; it
// turns on WAL, a 5 s busy timeout, foreign keys and immediate write
// transactions unless the connection string sets them itself.
//
// postgres and sqlserver only check the connection string: they do not
// contact the server, so a node can start during a Config DB outage and
// report it through Ping (the DB probe). Call Migrate once the server is up.
func Open(ctx context.Context, provider, connectionString string, opts ...Option) (*DB, error) {
	d, err := dialectFor(provider)
	if err != nil {
		return nil, err
	}
	if connectionString == "" {
		return nil, fmt.Errorf("%w: empty for provider %s", ErrBadConnectionString, d.provider)
	}
	dsn, memory, err := d.checkDSN(connectionString)
	if err != nil {
		return nil, err
	}
	var sdb *sql.DB
	if d == sqlServerDialect {
		c, err := newSQLServerConnector(dsn)
		if err != nil {
			return nil, fmt.Errorf("%w: %s: %v", ErrBadConnectionString, d.provider, err)
		}
		sdb = sql.OpenDB(c)
	} else if sdb, err = sql.Open(d.driver, dsn); err != nil {
		return nil, fmt.Errorf("%w: %s: %v", ErrBadConnectionString, d.provider, err)
	}
	db := &DB{sql: sdb, d: d, q: buildQueries(d), clock: clockwork.NewRealClock()}
	for _, o := range opts {
		o(db)
	}
	if db.noAlarmKey && d != postgresDialect {
		_ = sdb.Close()
		return nil, fmt.Errorf("configdb: the alarm_history key can only be dropped on postgres, not %s", d.provider)
	}
	sdb.SetMaxIdleConns(2)
	sdb.SetConnMaxIdleTime(5 * time.Minute)
	if memory {
		sdb.SetMaxOpenConns(1) // every SQLite connection to :memory: is a new, empty database
	}
	if d == sqliteDialect {
		if err := pingSQLite(ctx, sdb); err != nil {
			_ = sdb.Close()
			return nil, fmt.Errorf("configdb: open sqlite %q: %w", connectionString, err)
		}
	}
	return db, nil
}

// sqliteOpenBusyFor is how long Open retries a SQLite file that another
// process holds locked while opening it.
const sqliteOpenBusyFor = 10 * time.Second

// pingSQLite opens the first connection. Switching a new file to WAL needs
// a lock that SQLite does not wait for (the busy timeout does not apply),
// so when both nodes of a pair sharing one file start at once, one of them
// gets "database is locked"; it retries, backing off, instead of failing
// start-up.
func pingSQLite(ctx context.Context, sdb *sql.DB) error {
	deadline := time.Now().Add(sqliteOpenBusyFor)
	wait := 10 * time.Millisecond
	for {
		err := sdb.PingContext(ctx)
		if err == nil || !strings.Contains(err.Error(), "SQLITE_BUSY") || time.Now().After(deadline) {
			return err
		}
		select {
		case <-time.After(wait):
		case <-ctx.Done():
			return err
		}
		wait = min(2*wait, 500*time.Millisecond)
	}
}

// Provider returns the provider name: "sqlite", "postgres" or "sqlserver".
func (db *DB) Provider() string { return db.d.provider }

// Close closes every connection.
func (db *DB) Close() error { return db.sql.Close() }

// Ping runs the probe query SELECT 1 and returns nil when the database
// answered 1 before ctx's deadline. It opens a connection when the pool has
// none (a restarted server is picked up by the next Ping) and never retries
// past ctx.
func (db *DB) Ping(ctx context.Context) error {
	var one int
	if err := db.sql.QueryRowContext(ctx, "SELECT 1").Scan(&one); err != nil {
		return fmt.Errorf("configdb: %s: SELECT 1: %w", db.d.provider, err)
	}
	if one != 1 {
		return fmt.Errorf("configdb: %s: SELECT 1 answered %d", db.d.provider, one)
	}
	return nil
}

// now is the time written into rows: UTC, truncated to the microsecond that
// every dialect stores exactly.
func (db *DB) now() time.Time { return dbTime(db.clock.Now()) }

func dbTime(t time.Time) time.Time { return t.UTC().Truncate(time.Microsecond) }
