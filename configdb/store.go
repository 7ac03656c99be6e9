package configdb

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// maxKeyLen is the longest id, node id, name, actor or action, in
// characters (the VARCHAR(200) / NVARCHAR(200) columns). 200 keeps the
// two-column key of cluster_nodes within SQL Server's 900-byte limit for a
// clustered index (2 × 200 × 2 bytes).
const maxKeyLen = 200

// Cluster is a clusters row: one application cluster (Node:ClusterId), the
// unit of redundancy.
type Cluster struct {
	ID        string
	Name      string
	CreatedAt time.Time // set by UpsertCluster on insert
}

// ClusterNode is a cluster_nodes row: one otopcua node of a cluster.
type ClusterNode struct {
	ClusterID      string
	NodeID         string // host:port of Cluster:PublicHostname and Cluster:Port
	ApplicationURI string // OpcUa:ApplicationUri

	// ServiceLevelBase is the operator's stored preference (0–255). It is
	// kept for the admin page and not used by the runtime ServiceLevel.
	ServiceLevelBase int

	CreatedAt time.Time
	UpdatedAt time.Time
}

// Deployment is a deployments row: one version of a cluster's deployment
// document (package deployment decodes it).
type Deployment struct {
	ClusterID string
	// Version counts 1, 2, … per cluster in the order the versions were
	// stored; a higher version is always the newer document.
	Version int64
	// Document is the document's bytes exactly as stored.
	Document []byte
	// SHA256 is the lower-case hex SHA-256 of Document.
	SHA256 string
	// CreatedAt is the database's clock when the version was stored, in
	// UTC (not the node's clock: every writer is stamped by one clock).
	CreatedAt time.Time
}

// AuditEntry is an audit_log row.
type AuditEntry struct {
	ID     int64     // assigned by the database
	At     time.Time // zero = now (the DB's clock)
	Actor  string    // who: a user name or "node host:port"; required
	Action string    // what: e.g. "failover.manual"; required
	Target string    // on what: e.g. a cluster or node id
	Detail string    // free text
}

// UpsertCluster inserts the cluster or renames it.
func (db *DB) UpsertCluster(ctx context.Context, c Cluster) error {
	if err := checkKey("Cluster.ID", c.ID); err != nil {
		return err
	}
	if err := checkKey("Cluster.Name", c.Name); err != nil {
		return err
	}
	if _, err := db.sql.ExecContext(ctx, db.q.upsertCluster, c.ID, c.Name, db.now()); err != nil {
		return fmt.Errorf("configdb: upsert cluster %q: %w", c.ID, err)
	}
	return nil
}

// UpsertClusterNode inserts the node or updates its ApplicationURI and
// UpdatedAt. ServiceLevelBase is written only when the row is new; an
// existing row keeps the operator's value (SetServiceLevelBase changes it).
// The cluster must exist (ErrUnknownCluster).
func (db *DB) UpsertClusterNode(ctx context.Context, n ClusterNode) error {
	if err := checkNode(n); err != nil {
		return err
	}
	return db.inClusterTx(ctx, n.ClusterID, func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, db.q.upsertNode,
			n.ClusterID, n.NodeID, n.ApplicationURI, n.ServiceLevelBase, db.now())
		if err != nil {
			return fmt.Errorf("configdb: upsert node %s of cluster %q: %w", n.NodeID, n.ClusterID, err)
		}
		return nil
	})
}

// SetServiceLevelBase stores the operator's ServiceLevelBase (0–255) of an
// existing node (ErrNotFound otherwise).
func (db *DB) SetServiceLevelBase(ctx context.Context, clusterID, nodeID string, v int) error {
	if v < 0 || v > 255 {
		return fmt.Errorf("%w: ServiceLevelBase %d: accepted values are 0 to 255", ErrInvalid, v)
	}
	res, err := db.sql.ExecContext(ctx, db.q.setSLB, v, db.now(), clusterID, nodeID)
	if err != nil {
		return fmt.Errorf("configdb: set ServiceLevelBase of %s: %w", nodeID, err)
	}
	if n, err := res.RowsAffected(); err == nil && n == 0 {
		return fmt.Errorf("%w: node %s of cluster %q", ErrNotFound, nodeID, clusterID)
	}
	return nil
}

// ListClusterNodes returns the nodes of a cluster ordered by NodeID; an
// unknown cluster has none.
func (db *DB) ListClusterNodes(ctx context.Context, clusterID string) ([]ClusterNode, error) {
	rows, err := db.sql.QueryContext(ctx, db.q.listNodes, clusterID)
	if err != nil {
		return nil, fmt.Errorf("configdb: list nodes of cluster %q: %w", clusterID, err)
	}
	defer rows.Close()
	var out []ClusterNode
	for rows.Next() {
		var n ClusterNode
		if err := rows.Scan(&n.ClusterID, &n.NodeID, &n.ApplicationURI, &n.ServiceLevelBase, &n.CreatedAt, &n.UpdatedAt); err != nil {
			return nil, fmt.Errorf("configdb: list nodes of cluster %q: %w", clusterID, err)
		}
		n.CreatedAt, n.UpdatedAt = n.CreatedAt.UTC(), n.UpdatedAt.UTC()
		out = append(out, n)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("configdb: list nodes of cluster %q: %w", clusterID, err)
	}
	return out, nil
}

// PutDeployment stores document as the next version of the cluster's
// deployment and returns that row (Document is the slice passed in) and
// true. When the cluster's newest version already holds the same bytes
// (the same SHA-256), nothing is written: it returns that version and
// false, so running "otopcua deploy" twice does not make the nodes apply
// the same document again. A/B/A is three versions: only the newest counts.
//
// The version is assigned inside one transaction that holds the cluster's
// row locked (PostgreSQL FOR UPDATE, SQL Server UPDLOCK/HOLDLOCK, SQLite's
// BEGIN IMMEDIATE), so concurrent puts — from one handle or several nodes
// — get distinct, consecutive versions. A missing clusters row is created
// first (named after its id), so a deployment can be stored before any
// node of the cluster has run. The bytes are not interpreted: validating
// them is the caller's duty (deployment.Decode).
func (db *DB) PutDeployment(ctx context.Context, clusterID string, document []byte) (Deployment, bool, error) {
	if err := checkKey("cluster id", clusterID); err != nil {
		return Deployment{}, false, err
	}
	if len(document) == 0 {
		return Deployment{}, false, fmt.Errorf("%w: empty deployment document for cluster %q", ErrInvalid, clusterID)
	}
	dep := Deployment{ClusterID: clusterID, Document: document, SHA256: sha256Hex(document)}
	created := false
	err := db.inTx(ctx, func(tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, db.q.ensureCluster, clusterID, db.now()); err != nil {
			return fmt.Errorf("configdb: add cluster %q: %w", clusterID, err)
		}
		if db.q.lockCluster != "" {
			var id string
			if err := tx.QueryRowContext(ctx, db.q.lockCluster, clusterID).Scan(&id); err != nil {
				return fmt.Errorf("configdb: lock cluster %q: %w", clusterID, err)
			}
		}
		var newest int64
		var sum string
		var at time.Time
		err := tx.QueryRowContext(ctx, db.q.deploymentHead, clusterID).Scan(&newest, &sum, &at)
		switch {
		case err == nil && sum == dep.SHA256:
			dep.Version, dep.CreatedAt = newest, at.UTC()
			return nil
		case err != nil && !errors.Is(err, sql.ErrNoRows):
			return fmt.Errorf("configdb: newest deployment of cluster %q: %w", clusterID, err)
		}
		dep.Version, created = newest+1, true
		if _, err := tx.ExecContext(ctx, db.q.insertDeployment, clusterID, dep.Version, document, dep.SHA256); err != nil {
			return fmt.Errorf("configdb: store deployment version %d of cluster %q: %w", dep.Version, clusterID, err)
		}
		if err := tx.QueryRowContext(ctx, db.q.deploymentAt, clusterID, dep.Version).Scan(&at); err != nil {
			return fmt.Errorf("configdb: read back deployment version %d of cluster %q: %w", dep.Version, clusterID, err)
		}
		dep.CreatedAt = at.UTC()
		return nil
	})
	if err != nil {
		return Deployment{}, false, err
	}
	return dep, created, nil
}

// LatestDeployment returns the cluster's newest version (ErrNotFound when
// it has none).
func (db *DB) LatestDeployment(ctx context.Context, clusterID string) (Deployment, error) {
	return db.scanDeployment(ctx, fmt.Sprintf("no deployment for cluster %q", clusterID),
		db.q.latestDeployment, clusterID)
}

// DeploymentVersion returns one version of the cluster's deployment
// (ErrNotFound when there is no such version).
func (db *DB) DeploymentVersion(ctx context.Context, clusterID string, version int64) (Deployment, error) {
	return db.scanDeployment(ctx, fmt.Sprintf("no deployment version %d for cluster %q", version, clusterID),
		db.q.deploymentByVer, clusterID, version)
}

// LatestDeploymentVersion returns the number and SHA-256 of the cluster's
// newest version without reading the document, for a node that polls for
// a new one (ErrNotFound when there is none).
func (db *DB) LatestDeploymentVersion(ctx context.Context, clusterID string) (int64, string, error) {
	var v int64
	var sum string
	var at time.Time
	err := db.sql.QueryRowContext(ctx, db.q.deploymentHead, clusterID).Scan(&v, &sum, &at)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, "", fmt.Errorf("%w: no deployment for cluster %q", ErrNotFound, clusterID)
	}
	if err != nil {
		return 0, "", fmt.Errorf("configdb: newest deployment version of cluster %q: %w", clusterID, err)
	}
	return v, sum, nil
}

func (db *DB) scanDeployment(ctx context.Context, missing, query string, args ...any) (Deployment, error) {
	var d Deployment
	err := db.sql.QueryRowContext(ctx, query, args...).Scan(&d.ClusterID, &d.Version, &d.Document, &d.SHA256, &d.CreatedAt)
	if errors.Is(err, sql.ErrNoRows) {
		return Deployment{}, fmt.Errorf("%w: %s", ErrNotFound, missing)
	}
	if err != nil {
		return Deployment{}, fmt.Errorf("configdb: read deployment: %s: %w", strings.TrimPrefix(missing, "no "), err)
	}
	d.CreatedAt = d.CreatedAt.UTC()
	return d, nil
}

func sha256Hex(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// WriteAudit appends an entry to audit_log. A zero At is stamped with the
// DB's clock.
func (db *DB) WriteAudit(ctx context.Context, e AuditEntry) error {
	if err := checkKey("AuditEntry.Actor", e.Actor); err != nil {
		return err
	}
	if err := checkKey("AuditEntry.Action", e.Action); err != nil {
		return err
	}
	at := db.now()
	if !e.At.IsZero() {
		at = dbTime(e.At)
	}
	if _, err := db.sql.ExecContext(ctx, db.q.writeAudit, at, e.Actor, e.Action, e.Target, e.Detail); err != nil {
		return fmt.Errorf("configdb: write audit %s by %s: %w", e.Action, e.Actor, err)
	}
	return nil
}

// RecentAudit returns up to limit entries, newest first.
func (db *DB) RecentAudit(ctx context.Context, limit int) ([]AuditEntry, error) {
	if limit <= 0 {
		return nil, fmt.Errorf("%w: audit limit %d: must be at least 1", ErrInvalid, limit)
	}
	rows, err := db.sql.QueryContext(ctx, db.q.recentAudit, limit)
	if err != nil {
		return nil, fmt.Errorf("configdb: read audit log: %w", err)
	}
	defer rows.Close()
	var out []AuditEntry
	for rows.Next() {
		var e AuditEntry
		if err := rows.Scan(&e.ID, &e.At, &e.Actor, &e.Action, &e.Target, &e.Detail); err != nil {
			return nil, fmt.Errorf("configdb: read audit log: %w", err)
		}
		e.At = e.At.UTC()
		out = append(out, e)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("configdb: read audit log: %w", err)
	}
	return out, nil
}

// inClusterTx runs fn in a transaction after checking that the cluster
// exists (ErrUnknownCluster otherwise), so a missing cluster is reported
// the same way by every dialect instead of as a foreign-key error.
func (db *DB) inClusterTx(ctx context.Context, clusterID string, fn func(*sql.Tx) error) error {
	if err := checkKey("cluster id", clusterID); err != nil {
		return err
	}
	return db.inTx(ctx, func(tx *sql.Tx) error {
		var n int
		if err := tx.QueryRowContext(ctx, db.q.clusterExists, clusterID).Scan(&n); err != nil {
			return fmt.Errorf("configdb: look up cluster %q: %w", clusterID, err)
		}
		if n == 0 {
			return fmt.Errorf("%w %q: add it with UpsertCluster first", ErrUnknownCluster, clusterID)
		}
		return fn(tx)
	})
}

// inTx runs fn in a transaction, committed when fn returns nil and rolled
// back otherwise.
func (db *DB) inTx(ctx context.Context, fn func(*sql.Tx) error) (err error) {
	tx, err := db.sql.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("configdb: begin: %w", err)
	}
	defer func() {
		if err != nil {
			_ = tx.Rollback()
		}
	}()
	if err := fn(tx); err != nil {
		return err
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("configdb: commit: %w", err)
	}
	return nil
}

func checkKey(what, v string) error {
	if v == "" {
		return fmt.Errorf("%w: %s is empty", ErrInvalid, what)
	}
	if utf8.RuneCountInString(v) > maxKeyLen {
		return fmt.Errorf("%w: %s is longer than %d characters", ErrInvalid, what, maxKeyLen)
	}
	return nil
}

func checkNode(n ClusterNode) error {
	if err := checkKey("ClusterNode.ClusterID", n.ClusterID); err != nil {
		return err
	}
	if err := checkKey("ClusterNode.NodeID", n.NodeID); err != nil {
		return err
	}
	host, port, err := net.SplitHostPort(n.NodeID)
	if err != nil || host == "" {
		return fmt.Errorf("%w: ClusterNode.NodeID %q: accepted values are host:port", ErrInvalid, n.NodeID)
	}
	if p, err := strconv.Atoi(port); err != nil || p < 1 || p > 65535 {
		return fmt.Errorf("%w: ClusterNode.NodeID %q: the port must be 1 to 65535", ErrInvalid, n.NodeID)
	}
	if n.ApplicationURI == "" {
		return fmt.Errorf("%w: ClusterNode.ApplicationURI is empty", ErrInvalid)
	}
	if n.ServiceLevelBase < 0 || n.ServiceLevelBase > 255 {
		return fmt.Errorf("%w: ClusterNode.ServiceLevelBase %d: accepted values are 0 to 255", ErrInvalid, n.ServiceLevelBase)
	}
	return nil
}
