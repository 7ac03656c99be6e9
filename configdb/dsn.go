package configdb

import (
	"fmt"
	"net/url"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/microsoft/go-mssqldb/msdsn"
)

// sqliteDefaults are the settings Open adds to a SQLite connection string
// that does not set them. Each entry lists the DSN keys and the PRAGMA name
// that would set the same thing.
var sqliteDefaults = []struct {
	keys   []string // DSN parameters understood by modernc.org/sqlite
	pragma string   // _pragma=<name>(…) form
	add    string   // what Open appends when none is present
}{
	{[]string{"_busy_timeout", "_timeout"}, "busy_timeout", "_busy_timeout=5000"},
	{[]string{"_journal_mode", "_journal"}, "journal_mode", "_journal_mode=WAL"},
	{[]string{"_foreign_keys", "_fk"}, "foreign_keys", "_foreign_keys=1"},
	{[]string{"_txlock"}, "", "_txlock=immediate"},
}

// checkDSN validates a connection string for the dialect and returns what
// to hand the driver, and whether it names an in-memory SQLite database.
// It never contacts a server.
func (d *dialect) checkDSN(cs string) (dsn string, memory bool, err error) {
	switch d {
	case sqliteDialect:
		return sqliteDSN(cs)
	case postgresDialect:
		if _, err := pgx.ParseConfig(cs); err != nil {
			return "", false, fmt.Errorf("%w: postgres: %v (expected e.g. postgres://user:password@host:5432/otopcua?sslmode=disable)", ErrBadConnectionString, err)
		}
		return cs, false, nil
	default:
		if _, err := msdsn.Parse(cs); err != nil {
			return "", false, fmt.Errorf("%w: sqlserver: %v (expected e.g. sqlserver://user:password@host:1433?database=otopcua)", ErrBadConnectionString, err)
		}
		return cs, false, nil
	}
}

// sqliteDSN appends the defaults the connection string lacks. The string
// keeps its own text; only "&key=value" pairs are added at the end.
func sqliteDSN(cs string) (string, bool, error) {
	name, query, _ := strings.Cut(cs, "?")
	q, err := url.ParseQuery(query)
	if err != nil {
		return "", false, fmt.Errorf("%w: sqlite: parameters after '?': %v", ErrBadConnectionString, err)
	}
	if v := q.Get("_txlock"); v != "" && !strings.EqualFold(v, "immediate") && !strings.EqualFold(v, "exclusive") {
		return "", false, fmt.Errorf("%w: sqlite: _txlock=%s: accepted values are immediate (default) and exclusive; "+
			"a deferred write transaction can fail instead of waiting when two nodes write at once", ErrBadConnectionString, v)
	}
	var add []string
	for _, def := range sqliteDefaults {
		if !sqliteSets(q, def.keys, def.pragma) {
			add = append(add, def.add)
		}
	}
	memory := name == ":memory:" || name == "file::memory:" || q.Get("mode") == "memory"
	if len(add) == 0 {
		return cs, memory, nil
	}
	sep := "?"
	if strings.Contains(cs, "?") {
		sep = "&"
		if strings.HasSuffix(cs, "?") || strings.HasSuffix(cs, "&") {
			sep = ""
		}
	}
	return cs + sep + strings.Join(add, "&"), memory, nil
}

// sqliteSets reports whether q sets a setting through one of keys or a
// _pragma=<pragma>(…) entry.
func sqliteSets(q url.Values, keys []string, pragma string) bool {
	for _, k := range keys {
		if _, ok := q[k]; ok {
			return true
		}
	}
	if pragma == "" {
		return false
	}
	for _, p := range q["_pragma"] {
		p = strings.ToLower(strings.TrimSpace(p))
		if strings.HasPrefix(p, pragma+"(") || strings.HasPrefix(p, pragma+"=") || strings.HasPrefix(p, pragma+" ") {
			return true
		}
	}
	return false
}
