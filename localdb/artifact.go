package localdb

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"time"
)

// ChunkSize is the most bytes of an artifact one deployment_artifacts row
// holds (64 KiB). Rows stay far below SQLite's blob limit and a future
// row-by-row pair replication sends bounded messages.
const ChunkSize = 64 << 10

// maxPrealloc bounds the buffer LoadArtifact allocates up front from the
// pointer's size, so a damaged size cannot ask for gigabytes; a larger
// document still loads, growing as its chunks arrive.
const maxPrealloc = 64 << 20

// Artifact is a cached deployment document.
type Artifact struct {
	// Version is the deployment's version (its Config DB deployments id).
	Version int64
	// Doc is the deployment document, byte for byte as saved.
	Doc []byte
	// AppliedAt is when SaveArtifact stored it, by the DB's clock: UTC,
	// microsecond precision.
	AppliedAt time.Time
	// Origin is the node id of the LocalDb that saved it: this node's, or
	// the pair peer's when the artifact arrived by replication.
	Origin string
}

// SaveArtifact stores doc as the artifact of clusterID at version: its
// chunks, then the pointer row, in one transaction that also deletes the
// chunks of every other version of clusterID. After it returns nil,
// LoadArtifact(clusterID) yields exactly doc; after it fails, the previous
// artifact (if any) is still the one LoadArtifact yields. The pointer names
// the last saved version, not the highest: a node that applies an older
// deployment caches what it runs. Saving a version again replaces it.
//
// clusterID must not be empty, version must be ≥ 1 and doc non-empty.
func (db *DB) SaveArtifact(ctx context.Context, clusterID string, version int64, doc []byte) error {
	what := fmt.Sprintf("save the artifact of cluster %q version %d", clusterID, version)
	switch {
	case clusterID == "":
		return fmt.Errorf("localdb: save an artifact: the cluster id is empty")
	case version < 1:
		return fmt.Errorf("localdb: %s: versions start at 1", what)
	case len(doc) == 0:
		return fmt.Errorf("localdb: %s: the document is empty", what)
	}
	sum := sha256.Sum256(doc)
	chunks := (len(doc) + ChunkSize - 1) / ChunkSize
	tx, err := db.sql.BeginTx(ctx, nil) // IMMEDIATE: see dsn
	if err != nil {
		return db.writeError(what, err)
	}
	defer func() { _ = tx.Rollback() }() // ends the transaction on every return before Commit
	if err := db.writeChunks(ctx, tx, clusterID, version, doc); err != nil {
		return db.writeError(what, err)
	}
	if _, err := tx.ExecContext(ctx, "INSERT INTO deployment_pointer "+
		"(cluster_id, version, sha256, chunk_count, size, applied_at, hlc, origin) VALUES (?, ?, ?, ?, ?, ?, ?, ?) "+
		"ON CONFLICT (cluster_id) DO UPDATE SET version = excluded.version, sha256 = excluded.sha256, "+
		"chunk_count = excluded.chunk_count, size = excluded.size, applied_at = excluded.applied_at, "+
		"hlc = excluded.hlc, origin = excluded.origin",
		clusterID, version, hex.EncodeToString(sum[:]), chunks, len(doc), db.now().Format(timeLayout), db.stampText(), db.node); err != nil {
		return db.writeError(what, err)
	}
	if err := clearTombstone(ctx, tx, TablePointer, pointerKey(clusterID)); err != nil {
		return db.writeError(what, err)
	}
	dropped, err := db.dropChunks(ctx, tx, "cluster_id = ? AND version <> ?", clusterID, version)
	if err != nil {
		return db.writeError(what, err)
	}
	if err := tx.Commit(); err != nil {
		return db.writeError(what, err)
	}
	db.log.Debug("localdb: saved the deployment artifact", "cluster_id", clusterID, "version", version,
		"size", len(doc), "chunks", chunks, "dropped_chunks", dropped)
	return nil
}

// writeChunks replaces the chunks of (clusterID, version) with doc's, each
// with a new stamp; chunks past the new count become tombstones.
func (db *DB) writeChunks(ctx context.Context, tx *sql.Tx, clusterID string, version int64, doc []byte) error {
	ins, err := tx.PrepareContext(ctx, "INSERT INTO deployment_artifacts (cluster_id, version, chunk_index, data, hlc, origin) "+
		"VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (cluster_id, version, chunk_index) DO UPDATE SET "+
		"data = excluded.data, hlc = excluded.hlc, origin = excluded.origin")
	if err != nil {
		return err
	}
	defer ins.Close()
	n := 0
	for ; n*ChunkSize < len(doc); n++ {
		chunk := doc[n*ChunkSize : min((n+1)*ChunkSize, len(doc))]
		if _, err := ins.ExecContext(ctx, clusterID, version, n, chunk, db.stampText(), db.node); err != nil {
			return err
		}
		if err := clearTombstone(ctx, tx, TableArtifacts, artifactKey(clusterID, version, int64(n))); err != nil {
			return err
		}
	}
	_, err = db.dropChunks(ctx, tx, "cluster_id = ? AND version = ? AND chunk_index >= ?", clusterID, version, n)
	return err
}

// dropChunks deletes the chunk rows matching where, leaving a tombstone of
// this node for each. It returns how many it deleted.
func (db *DB) dropChunks(ctx context.Context, tx *sql.Tx, where string, args ...any) (int, error) {
	return db.deleteTombstoned(ctx, tx, TableArtifacts, "cluster_id, version, chunk_index", func(rows *sql.Rows) (string, error) {
		var c string
		var v, i int64
		err := rows.Scan(&c, &v, &i)
		return artifactKey(c, v, i), err
	}, where, args...)
}

// pointer is a deployment_pointer row.
type pointer struct {
	version    int64
	sha256     string
	chunkCount int64
	size       int64
	appliedAt  string
	origin     string
}

// LoadArtifact returns the artifact the pointer row of clusterID names,
// after checking that every chunk is there, no other is, and the size and
// SHA-256 match the pointer. It returns ErrNoArtifact when nothing is
// cached for clusterID, and an error wrapping ErrCorrupt (saying what is
// wrong) when the cache cannot be trusted. It reads one snapshot, so a save
// by another connection or process is seen whole or not at all.
func (db *DB) LoadArtifact(ctx context.Context, clusterID string) (Artifact, error) {
	tx, err := db.sql.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return Artifact{}, db.readError(clusterID, err)
	}
	defer func() { _ = tx.Rollback() }()
	var p pointer
	err = tx.QueryRowContext(ctx, "SELECT version, sha256, chunk_count, size, applied_at, origin FROM deployment_pointer WHERE cluster_id = ?",
		clusterID).Scan(&p.version, &p.sha256, &p.chunkCount, &p.size, &p.appliedAt, &p.origin)
	if errors.Is(err, sql.ErrNoRows) {
		return Artifact{}, fmt.Errorf("%w for cluster %q in %s", ErrNoArtifact, clusterID, db.path)
	}
	if err != nil {
		return Artifact{}, db.readError(clusterID, err)
	}
	a, err := p.check(clusterID)
	if err != nil {
		return Artifact{}, err
	}
	if a.Doc, err = db.readChunks(ctx, tx, clusterID, p); err != nil {
		return Artifact{}, err
	}
	if int64(len(a.Doc)) != p.size {
		return Artifact{}, corrupt(clusterID, p.version, "the chunks hold %d bytes, the pointer says %d", len(a.Doc), p.size)
	}
	if sum := sha256.Sum256(a.Doc); hex.EncodeToString(sum[:]) != p.sha256 {
		return Artifact{}, corrupt(clusterID, p.version, "the SHA-256 of the chunks is %x, the pointer says %s", sum, p.sha256)
	}
	return a, nil
}

// check validates the pointer row's own fields.
func (p pointer) check(clusterID string) (Artifact, error) {
	if p.version < 1 || p.chunkCount < 1 || p.size < 1 { // SaveArtifact never writes these
		return Artifact{}, corrupt(clusterID, p.version, "the pointer says version %d, %d chunks, %d bytes", p.version, p.chunkCount, p.size)
	}
	if b, err := hex.DecodeString(p.sha256); err != nil || len(b) != sha256.Size {
		return Artifact{}, corrupt(clusterID, p.version, "the pointer's sha256 %q is not 64 hex digits", p.sha256)
	}
	at, err := time.Parse(timeLayout, p.appliedAt)
	if err != nil {
		return Artifact{}, corrupt(clusterID, p.version, "the pointer's applied_at %q is not a time", p.appliedAt)
	}
	return Artifact{Version: p.version, AppliedAt: at.UTC(), Origin: p.origin}, nil
}

// readChunks concatenates chunks 0 … chunkCount-1 of the pointed-to version.
func (db *DB) readChunks(ctx context.Context, tx *sql.Tx, clusterID string, p pointer) ([]byte, error) {
	rows, err := tx.QueryContext(ctx, "SELECT chunk_index, data FROM deployment_artifacts "+
		"WHERE cluster_id = ? AND version = ? ORDER BY chunk_index", clusterID, p.version)
	if err != nil {
		return nil, db.readError(clusterID, err)
	}
	defer rows.Close()
	doc := make([]byte, 0, min(p.size, maxPrealloc))
	var next int64 // the chunk index expected next
	for rows.Next() {
		var idx int64
		var data sql.RawBytes // valid until Next; appended at once
		if err := rows.Scan(&idx, &data); err != nil {
			return nil, db.readError(clusterID, err)
		}
		switch {
		case idx >= p.chunkCount || idx < next:
			return nil, corrupt(clusterID, p.version, "chunk %d is there, the pointer says %d chunks", idx, p.chunkCount)
		case idx > next:
			return nil, corrupt(clusterID, p.version, "chunk index %d is missing (the pointer says %d chunks)", next, p.chunkCount)
		}
		doc = append(doc, data...)
		next++
	}
	if err := rows.Err(); err != nil {
		return nil, db.readError(clusterID, err)
	}
	if next < p.chunkCount {
		return nil, corrupt(clusterID, p.version, "chunk index %d is missing (the pointer says %d chunks)", next, p.chunkCount)
	}
	return doc, nil
}

func corrupt(clusterID string, version int64, format string, args ...any) error {
	return fmt.Errorf("%w: cluster %q version %d: %s", ErrCorrupt, clusterID, version, fmt.Sprintf(format, args...))
}

// readError explains a failed read; SQLite finding the file damaged is
// ErrCorrupt.
func (db *DB) readError(clusterID string, err error) error {
	if damaged(err) {
		return fmt.Errorf("%w: cluster %q: SQLite reports %s damaged: %w", ErrCorrupt, clusterID, db.path, err)
	}
	return fmt.Errorf("localdb: load the artifact of cluster %q from %s: %w", clusterID, db.path, err)
}
