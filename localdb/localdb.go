package localdb

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/url"
	"os"
	"path/filepath"
	"syscall"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/otopcua/otopcua/localdb/hlc"
	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"
)

// DefaultPath is the default of LocalDb:Path, relative to the working
// directory.
const DefaultPath = "otopcua-local.db"

// Sentinel errors callers branch on.
var (
	// ErrNoArtifact is returned by LoadArtifact when no artifact of the
	// ClusterId is cached (a new node, or a node that never applied a
	// deployment of that cluster).
	ErrNoArtifact = errors.New("localdb: no deployment artifact cached")
	// ErrCorrupt is wrapped by LoadArtifact when the cached artifact cannot
	// be trusted: a chunk is missing or extra, the size or the SHA-256 does
	// not match the pointer row, or SQLite reports the file damaged. The
	// wrapping error says which.
	ErrCorrupt = errors.New("localdb: cached deployment artifact is corrupt")
	// ErrNotDatabase is wrapped by Open when the file at the path is not an
	// SQLite database, is damaged beyond opening, or is an SQLite database
	// that belongs to something else (the Config DB, say).
	ErrNotDatabase = errors.New("localdb: not an otopcua LocalDb file")
	// ErrSchemaNewer is wrapped by Open when the file was written by a newer
	// otopcua whose schema this build does not know.
	ErrSchemaNewer = errors.New("localdb: file was written by a newer otopcua")
)

// busyTimeout is how long a statement waits for another connection's lock
// (SQLite's busy_timeout) before failing with "database is locked".
const busyTimeout = 5 * time.Second

// openBusyFor is how long Open retries a file another process holds
// locked while the first connection is set up; see pingRetrying.
const openBusyFor = 10 * time.Second

// DB is an open LocalDb file. It is safe for concurrent use; writes are
// serialised by SQLite (BEGIN IMMEDIATE, busy timeout), also against another
// process that has the same file open.
type DB struct {
	sql   *sql.DB
	path  string // absolute
	log   *slog.Logger
	clock clockwork.Clock
	node  string     // origin of the rows this node writes
	hlc   *hlc.Clock // stamps every replicated row written here
	skew  time.Duration
	stmts stmtCache // the timer-driven queries, prepared once
}

// Option adjusts Open.
type Option func(*DB)

// WithClock sets the clock that stamps applied_at. Default: the real clock.
func WithClock(c clockwork.Clock) Option {
	return func(db *DB) { db.clock = c }
}

// WithNodeID sets the node id that stamps this node's rows (the origin
// column and the node of every hlc.Stamp). It must pass hlc.CheckNode; Open
// refuses one that does not. Default: a random id ("n-" and 16 hex digits),
// new at every Open.
func WithNodeID(id string) Option {
	return func(db *DB) { db.node = id }
}

// WithMaxSkew sets how far ahead of this node's clock a remote stamp may be
// before ApplyRemote refuses its batch. Default hlc.DefaultMaxSkew (60 s).
func WithMaxSkew(d time.Duration) Option {
	return func(db *DB) { db.skew = d }
}

// Open opens the LocalDb file at path, creating the file and its schema
// when missing, and upgrading the schema of a file written by an older
// otopcua. The file is put in WAL mode; statements wait up to 5 s for a
// lock held by another connection or process.
//
// Open fails, with an error that names the path and what to do, when the
// path is empty, is a directory or not a regular file, lies in a missing
// directory, cannot be read, holds something other than an otopcua LocalDb
// (ErrNotDatabase) or was written by a newer otopcua (ErrSchemaNewer).
// A file that can be read but not written opens (LoadArtifact works) when
// its schema is current; SaveArtifact then fails.
//
// logger receives a line when a file is created or its schema upgraded,
// and a warning when the file opens read-only; nil discards.
func Open(ctx context.Context, path string, logger *slog.Logger, opts ...Option) (*DB, error) {
	abs, err := checkPath(path)
	if err != nil {
		return nil, err
	}
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	db := &DB{path: abs, log: logger.With("path", abs), clock: clockwork.NewRealClock()}
	for _, o := range opts {
		o(db)
	}
	if err := db.initClock(); err != nil {
		return nil, err
	}
	sdb, err := connect(ctx, dsn(abs, false))
	if sqliteCode(err) == sqlite3.SQLITE_READONLY && !hasWAL(abs) {
		// SQLite cannot read a WAL-mode file whose -shm it can neither
		// open nor create (file and directory both read-only) unless told
		// the file is immutable. Without a -wal file the main file holds
		// every committed transaction, so reading it that way is exact
		// (and LoadArtifact's hash check would catch a torn read, should
		// a privileged process write the file meanwhile): the cache loads.
		if ro, roErr := connect(ctx, dsn(abs, true)); roErr == nil {
			sdb, err = ro, nil
			db.log.Warn("localdb: the file and its directory are read-only: the cached deployment loads, but saving a new one will fail")
		}
	}
	if err != nil {
		return nil, openError(abs, err)
	}
	db.sql = sdb
	if err := db.migrate(ctx, migrations); err != nil {
		_ = sdb.Close()
		return nil, err
	}
	return db, nil
}

// hasWAL reports whether a non-empty write-ahead log lies beside the file.
func hasWAL(abs string) bool {
	fi, err := os.Stat(abs + "-wal")
	return err == nil && fi.Size() > 0
}

// connect opens a pool on name and its first connection.
func connect(ctx context.Context, name string) (*sql.DB, error) {
	sdb, err := sql.Open("sqlite", name)
	if err != nil { // the driver only parses the name here
		return nil, err
	}
	sdb.SetMaxIdleConns(2)
	sdb.SetConnMaxIdleTime(5 * time.Minute)
	if err := pingRetrying(ctx, sdb); err != nil {
		_ = sdb.Close()
		return nil, err
	}
	return sdb, nil
}

// Close closes every connection. The last connection to the file folds the
// write-ahead log back into it.
func (db *DB) Close() error {
	db.stmts.close()
	return db.sql.Close()
}

// Path returns the absolute path of the file.
func (db *DB) Path() string { return db.path }

// sqliteHeader is how every SQLite 3 database file begins.
var sqliteHeader = []byte("SQLite format 3\x00")

// checkPath returns the absolute form of path after checking what SQLite
// would otherwise report vaguely ("unable to open database file") or not at
// all (a directory, a file of something else).
func checkPath(path string) (string, error) {
	if path == "" {
		return "", fmt.Errorf("localdb: LocalDb:Path is empty: set it to a file such as %s", DefaultPath)
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return "", fmt.Errorf("localdb: LocalDb:Path %q: %w", path, err)
	}
	fi, err := os.Stat(abs)
	switch {
	case errors.Is(err, os.ErrNotExist), errors.Is(err, syscall.ENOTDIR):
		return abs, checkDir(abs)
	case err != nil:
		return "", fmt.Errorf("localdb: LocalDb:Path %s: %w: give the otopcua user access to the file and its directory", abs, err)
	case fi.IsDir():
		return "", fmt.Errorf("localdb: LocalDb:Path %s is a directory: set LocalDb:Path to a file, such as %s",
			abs, filepath.Join(abs, DefaultPath))
	case !fi.Mode().IsRegular():
		return "", fmt.Errorf("localdb: LocalDb:Path %s is not a regular file but %s: set LocalDb:Path to a file", abs, kindOf(fi.Mode()))
	}
	return abs, checkHeader(abs)
}

// kindOf names what a non-regular, non-directory file is.
func kindOf(m os.FileMode) string {
	switch {
	case m&os.ModeDevice != 0:
		return "a device"
	case m&os.ModeNamedPipe != 0:
		return "a named pipe"
	case m&os.ModeSocket != 0:
		return "a socket"
	}
	return "a special file (" + m.Type().String() + ")"
}

// checkDir checks that the directory of a file to be created exists.
func checkDir(abs string) error {
	dir := filepath.Dir(abs)
	fi, err := os.Stat(dir)
	if err != nil {
		return fmt.Errorf("localdb: LocalDb:Path %s: its directory cannot be used: %w: create the directory, or set LocalDb:Path to a file in an existing one", abs, err)
	}
	if !fi.IsDir() {
		return fmt.Errorf("localdb: LocalDb:Path %s: %s is not a directory: set LocalDb:Path to a file in a directory", abs, dir)
	}
	return nil
}

// checkHeader refuses an existing, non-empty file that does not begin like
// an SQLite database. An empty file is a new database to SQLite.
func checkHeader(abs string) error {
	f, err := os.Open(abs)
	if err != nil {
		return fmt.Errorf("localdb: LocalDb:Path %s cannot be read: %w: give the otopcua user read and write access to it", abs, err)
	}
	defer f.Close()
	hdr := make([]byte, len(sqliteHeader))
	n, err := io.ReadFull(f, hdr)
	if err != nil && !errors.Is(err, io.EOF) && !errors.Is(err, io.ErrUnexpectedEOF) {
		return fmt.Errorf("localdb: LocalDb:Path %s cannot be read: %w", abs, err)
	}
	if n == 0 {
		return nil
	}
	if n < len(hdr) || !bytes.Equal(hdr, sqliteHeader) {
		return notDatabase(abs, "it does not begin with the SQLite header")
	}
	return nil
}

func notDatabase(abs, why string) error {
	return fmt.Errorf("%w: %s: %s: move the file aside or set LocalDb:Path to another file "+
		"(otopcua then starts an empty cache and fills it at the next applied deployment)", ErrNotDatabase, abs, why)
}

// dsn is the modernc.org/sqlite data source name of the file: a SQLite URI
// (so a path holding '?' or '#' stays one path) with the settings every
// pooled connection applies when it opens. Write transactions begin
// IMMEDIATE so two writers queue on the busy timeout instead of failing
// when a read lock cannot be upgraded. readOnly opens the file read-only
// and immutable: no locks, no -wal or -shm (see Open for when).
func dsn(abs string, readOnly bool) string {
	u := url.URL{Path: filepath.ToSlash(abs)}
	s := fmt.Sprintf("file:%s?_pragma=busy_timeout(%d)&_pragma=journal_mode(WAL)&_txlock=immediate",
		u.EscapedPath(), busyTimeout.Milliseconds())
	if readOnly {
		s += "&mode=ro&immutable=1"
	}
	return s
}

// pingRetrying opens the first connection. Switching a new file to WAL takes
// a lock SQLite does not wait for (the busy timeout does not apply), so when
// two processes open one new file at once (a restart overlapping the old
// process's exit) one of them gets SQLITE_BUSY; it retries, backing off, for
// up to openBusyFor. This bounds a wait on another process in real time, so
// it does not use the injected clock.
func pingRetrying(ctx context.Context, sdb *sql.DB) error {
	deadline := time.Now().Add(openBusyFor)
	wait := 10 * time.Millisecond
	for {
		err := sdb.PingContext(ctx)
		if err == nil || sqliteCode(err) != sqlite3.SQLITE_BUSY || time.Now().After(deadline) {
			return err
		}
		t := time.NewTimer(wait)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return err
		}
		wait = min(2*wait, 500*time.Millisecond)
	}
}

// sqliteCode is the primary SQLite result code carried by err, or 0.
func sqliteCode(err error) int {
	var se *sqlite.Error
	if errors.As(err, &se) {
		return se.Code() & 0xff
	}
	return 0
}

// openError explains a failure to set up the first connection.
func openError(abs string, err error) error {
	switch sqliteCode(err) {
	case sqlite3.SQLITE_NOTADB:
		return notDatabase(abs, err.Error())
	case sqlite3.SQLITE_CORRUPT:
		return notDatabase(abs, "SQLite reports it damaged: "+err.Error())
	case sqlite3.SQLITE_CANTOPEN, sqlite3.SQLITE_PERM, sqlite3.SQLITE_READONLY:
		return fmt.Errorf("localdb: open %s: %w: give the otopcua user read and write access to the file and its directory "+
			"(SQLite also creates %s-wal and %s-shm beside it)", abs, err, filepath.Base(abs), filepath.Base(abs))
	case sqlite3.SQLITE_BUSY:
		return fmt.Errorf("localdb: open %s: %w: another process has held the file locked for %s; is a second otopcua using the same LocalDb:Path?", abs, err, openBusyFor)
	}
	return fmt.Errorf("localdb: open %s: %w", abs, err)
}

// now is the time written into rows: UTC, truncated to the microsecond the
// text form keeps.
func (db *DB) now() time.Time { return db.clock.Now().UTC().Truncate(time.Microsecond) }

// timeLayout is how times are stored: fixed-width UTC text, which sorts in
// time order and reads well in the sqlite3 shell.
const timeLayout = "2006-01-02T15:04:05.000000Z"

// damaged reports whether err is SQLite saying the file is not a database
// or is malformed.
func damaged(err error) bool {
	c := sqliteCode(err)
	return c == sqlite3.SQLITE_NOTADB || c == sqlite3.SQLITE_CORRUPT
}

// writeError explains a failed write (what: the job, in words) and what to
// do about it.
func (db *DB) writeError(what string, err error) error {
	switch c := sqliteCode(err); {
	case c == sqlite3.SQLITE_READONLY || c == sqlite3.SQLITE_PERM || c == sqlite3.SQLITE_CANTOPEN:
		return fmt.Errorf("localdb: %s: %s cannot be written: %w: give the otopcua user write access to the file and its directory", what, db.path, err)
	case c == sqlite3.SQLITE_FULL:
		return fmt.Errorf("localdb: %s: %s: the disk is full: %w", what, db.path, err)
	case c == sqlite3.SQLITE_BUSY:
		return fmt.Errorf("localdb: %s: %s: %w: another connection or process held the file locked for longer than %s", what, db.path, err, busyTimeout)
	case damaged(err):
		return fmt.Errorf("localdb: %s: %s: SQLite reports the file damaged: %w: move it aside; otopcua then starts an empty LocalDb "+
			"(the deployment cache refills at the next applied deployment; alarm history still queued in the old file is not delivered)", what, db.path, err)
	}
	return fmt.Errorf("localdb: %s: %s: %w", what, db.path, err)
}
