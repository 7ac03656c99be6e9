package localdb

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"fmt"

	"github.com/otopcua/otopcua/localdb/hlc"
)

// Replicated table names, in the order a batch applies them: a version's
// chunks before the pointer that names it.
const (
	TableArtifacts = "deployment_artifacts"
	TablePointer   = "deployment_pointer"
	TableEvents    = "alarm_sf_events"
)

var replicatedTables = []string{TableArtifacts, TablePointer, TableEvents}

// ReplicatedTables names the tables pair replication copies, in apply order.
func ReplicatedTables() []string { return append([]string(nil), replicatedTables...) }

// tableOrder is a table's place in replicatedTables, or -1.
func tableOrder(table string) int {
	for i, t := range replicatedTables {
		if t == table {
			return i
		}
	}
	return -1
}

// initClock sets the node id (random when not given) and the HLC, reading
// the DB's clock.
func (db *DB) initClock() error {
	if db.node == "" {
		var b [8]byte
		_, _ = rand.Read(b[:]) // never fails (crypto/rand)
		db.node = "n-" + hex.EncodeToString(b[:])
	}
	if err := hlc.CheckNode(db.node); err != nil {
		return fmt.Errorf("localdb: node id: %w", err)
	}
	db.hlc = hlc.New(db.node, func() int64 { return db.clock.Now().UnixMilli() }, db.skew)
	return nil
}

// NodeID is the id this node stamps its rows with.
func (db *DB) NodeID() string { return db.node }

// Clock is the DB's hybrid logical clock.
func (db *DB) Clock() *hlc.Clock { return db.hlc }

// stampText is a new stamp of this node as stored in the hlc column.
// Callers take it inside their write transaction (after BEGIN IMMEDIATE), so
// that stamp order is commit order and a reader that has seen a stamp has
// seen every local row stamped before it.
func (db *DB) stampText() string { return db.hlc.Now().String() }

// execer is *sql.Tx (or *sql.DB).
type execer interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
}

// tombstone records the delete of key in table at stamp.
func tombstone(ctx context.Context, tx execer, table, key string, s hlc.Stamp) error {
	_, err := tx.ExecContext(ctx, "INSERT INTO replication_tombstones (tbl, key, hlc, origin) VALUES (?, ?, ?, ?) "+
		"ON CONFLICT (tbl, key) DO UPDATE SET hlc = excluded.hlc, origin = excluded.origin WHERE excluded.hlc > hlc",
		table, key, s.String(), s.Node)
	return err
}

// clearTombstone forgets the delete of key once a later write of the row
// replaced it.
func clearTombstone(ctx context.Context, tx execer, table, key string) error {
	_, err := tx.ExecContext(ctx, "DELETE FROM replication_tombstones WHERE tbl = ? AND key = ?", table, key)
	return err
}

// deleteTombstoned deletes the rows of table matching where, leaving a
// tombstone of this node for each, and returns how many it deleted. keyCols
// are the table's key columns; key scans them from a row and returns the
// row's key (a Change's Key).
func (db *DB) deleteTombstoned(ctx context.Context, tx *sql.Tx, table, keyCols string, key func(*sql.Rows) (string, error),
	where string, args ...any) (int, error) {
	rows, err := tx.QueryContext(ctx, "SELECT "+keyCols+" FROM "+table+" WHERE "+where, args...)
	if err != nil {
		return 0, err
	}
	var keys []string
	for rows.Next() {
		k, err := key(rows)
		if err != nil {
			rows.Close()
			return 0, err
		}
		keys = append(keys, k)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return 0, err
	}
	if len(keys) == 0 {
		return 0, nil
	}
	if _, err := tx.ExecContext(ctx, "DELETE FROM "+table+" WHERE "+where, args...); err != nil {
		return 0, err
	}
	for _, k := range keys {
		if err := tombstone(ctx, tx, table, k, db.hlc.Now()); err != nil {
			return 0, err
		}
	}
	return len(keys), nil
}

// stampExisting is schema step 3's Go part: every row written before it gets
// its own stamp of this node, so that the first sync sends it.
func stampExisting(ctx context.Context, db *DB, tx *sql.Tx) error {
	for _, table := range replicatedTables {
		rows, err := tx.QueryContext(ctx, "SELECT rowid FROM "+table+" WHERE hlc = '' ORDER BY rowid")
		if err != nil {
			return err
		}
		var ids []int64
		for rows.Next() {
			var id int64
			if err := rows.Scan(&id); err != nil {
				rows.Close()
				return err
			}
			ids = append(ids, id)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return err
		}
		for _, id := range ids {
			if _, err := tx.ExecContext(ctx, "UPDATE "+table+" SET hlc = ?, origin = ? WHERE rowid = ?", db.stampText(), db.node, id); err != nil {
				return err
			}
		}
	}
	return nil
}
