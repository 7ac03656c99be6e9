package lease

import (
	"context"
	"fmt"
	"time"

	"github.com/otopcua/otopcua/configdb"
)

// MinConfigDBTTL is the shortest time to live NewConfigDB accepts.
const MinConfigDBTTL = time.Millisecond

// configDBLease is the lease stored in the Config DB's cluster_leases table
// (schema version 5): every node of a pair shares the Config DB, and the
// expiry is the database's clock.
type configDBLease struct {
	db        *configdb.DB
	clusterID string
	ttl       time.Duration
}

var _ Lease = (*configDBLease)(nil)

// NewConfigDB returns the lease of clusterID in db. db must be migrated
// (configdb.DB.Migrate) before the first call; the lease does not close db.
// ttl is at least MinConfigDBTTL (microsecond resolution).
func NewConfigDB(db *configdb.DB, clusterID string, ttl time.Duration) (Lease, error) {
	if db == nil {
		return nil, fmt.Errorf("%w: no Config DB", ErrInvalid)
	}
	if err := checkNew(clusterID, ttl, MinConfigDBTTL); err != nil {
		return nil, err
	}
	return &configDBLease{db: db, clusterID: clusterID, ttl: ttl}, nil
}

// Acquire implements Lease: one conditional UPDATE (configdb.AcquireLease).
func (c *configDBLease) Acquire(ctx context.Context, owner string, evict ...string) (Grant, error) {
	if err := checkOwner(owner); err != nil {
		return Grant{}, err
	}
	st, ok, err := c.db.AcquireLease(ctx, c.clusterID, owner, c.ttl, evict)
	if err != nil {
		return Grant{}, err
	}
	if !ok {
		return Grant{}, &HeldError{Holder: st.Holder, Epoch: st.Epoch}
	}
	return Grant{Holder: st.Holder, Epoch: st.Epoch, TTL: st.Remaining}, nil
}

// Release implements Lease.
func (c *configDBLease) Release(ctx context.Context, owner string) error {
	if err := checkOwner(owner); err != nil {
		return err
	}
	_, err := c.db.ReleaseLease(ctx, c.clusterID, owner)
	return err
}

// Holder implements Lease.
func (c *configDBLease) Holder(ctx context.Context) (Grant, error) {
	st, err := c.db.LeaseHolder(ctx, c.clusterID)
	if err != nil {
		return Grant{}, err
	}
	return Grant{Holder: st.Holder, Epoch: st.Epoch, TTL: st.Remaining}, nil
}

// TTL implements Lease.
func (c *configDBLease) TTL() time.Duration { return c.ttl }

// Name implements Lease: "configdb (sqlite)", "configdb (postgres)" or
// "configdb (sqlserver)".
func (c *configDBLease) Name() string { return "configdb (" + c.db.Provider() + ")" }
