package configdb

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"
)

// ErrFloatingIdentityExists is wrapped by PutFloatingIdentity when the
// cluster has a floating identity already and replace is false.
var ErrFloatingIdentityExists = errors.New("configdb: the cluster has a floating identity already")

// FloatingIdentity is the application identity the members of a ClusterId
// present on their floating address (floating_identities, schema version
// 7): provisioned once, read by every member at start.
type FloatingIdentity struct {
	// ApplicationURI is the identity's ApplicationUri.
	ApplicationURI string
	// Certificate is its application instance certificate (DER).
	Certificate []byte
	// SealedKey is its private key sealed by the caller (the Config DB
	// never sees it in clear: opcua/pki.SealKey with a key derived from
	// Cluster:Secret).
	SealedKey []byte
	// CreatedAt is when it was stored (the writer's clock, microseconds).
	CreatedAt time.Time
}

// PutFloatingIdentity stores id as clusterID's floating identity. When the
// cluster has one already it is replaced only with replace; otherwise the
// error wraps ErrFloatingIdentityExists.
func (db *DB) PutFloatingIdentity(ctx context.Context, clusterID string, id FloatingIdentity, replace bool) error {
	if err := checkKey("cluster id", clusterID); err != nil {
		return err
	}
	if id.ApplicationURI == "" || len(id.Certificate) == 0 || len(id.SealedKey) == 0 {
		return fmt.Errorf("%w: a floating identity needs an ApplicationUri, a certificate and a sealed key", ErrInvalid)
	}
	now := db.clock.Now().UnixMicro()
	return db.inTx(ctx, func(tx *sql.Tx) error {
		var n int
		if err := tx.QueryRowContext(ctx, db.q.countFloatingIdentity, clusterID).Scan(&n); err != nil {
			return fmt.Errorf("configdb: %s: floating identity of %q: %w", db.d.provider, clusterID, err)
		}
		stmt, args := db.q.insertFloatingIdentity, []any{clusterID, id.ApplicationURI, id.Certificate, id.SealedKey, now}
		if n > 0 {
			if !replace {
				return fmt.Errorf("%w: %q", ErrFloatingIdentityExists, clusterID)
			}
			stmt, args = db.q.updateFloatingIdentity, []any{id.ApplicationURI, id.Certificate, id.SealedKey, now, clusterID}
		}
		if _, err := tx.ExecContext(ctx, stmt, args...); err != nil {
			return fmt.Errorf("configdb: %s: store the floating identity of %q: %w", db.d.provider, clusterID, err)
		}
		return nil
	})
}

// FloatingIdentity returns clusterID's floating identity; the error wraps
// ErrNotFound when none was provisioned.
func (db *DB) FloatingIdentity(ctx context.Context, clusterID string) (FloatingIdentity, error) {
	if err := checkKey("cluster id", clusterID); err != nil {
		return FloatingIdentity{}, err
	}
	var id FloatingIdentity
	var created int64
	err := db.sql.QueryRowContext(ctx, db.q.floatingIdentity, clusterID).Scan(&id.ApplicationURI, &id.Certificate, &id.SealedKey, &created)
	if errors.Is(err, sql.ErrNoRows) {
		return FloatingIdentity{}, fmt.Errorf("%w: no floating identity for cluster %q", ErrNotFound, clusterID)
	}
	if err != nil {
		return FloatingIdentity{}, fmt.Errorf("configdb: %s: floating identity of %q: %w", db.d.provider, clusterID, err)
	}
	id.CreatedAt = time.UnixMicro(created).UTC()
	return id, nil
}
