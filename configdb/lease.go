package configdb

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"time"
)

// MaxLeaseEvict is the most holders one AcquireLease call may evict.
const MaxLeaseEvict = 16

// LeaseState is a cluster_leases row as the database saw it.
type LeaseState struct {
	// Holder is the owner holding the lease; "" when it is free or
	// expired (on the database's clock).
	Holder string
	// Epoch is the fencing token: it rises by 1 each time the holder
	// changes (0: never held).
	Epoch uint64
	// Remaining is how long the lease still lives, on the database's
	// clock, from the moment the statement ran; 0 when free or expired.
	Remaining time.Duration
}

// AcquireLease takes the lease of clusterID for owner for ttl (rounded
// down to the microsecond, at least 1 µs) when it is free, expired, already
// held by owner (a renewal: the expiry becomes now+ttl on the database's
// clock and the epoch stays) or held by one of evict. acquired is false when
// another live owner holds it; state is then that holder. The row is
// created on first use (INSERT … ON CONFLICT DO NOTHING; SQL Server: MERGE
// WITH (HOLDLOCK)), so nodes racing on a new cluster cannot both win: the
// take itself is one conditional UPDATE.
//
// Any error means the database did not answer: the caller must treat the
// lease as not held.
func (db *DB) AcquireLease(ctx context.Context, clusterID, owner string, ttl time.Duration, evict []string) (state LeaseState, acquired bool, err error) {
	if err := checkLeaseArgs(clusterID, owner); err != nil {
		return LeaseState{}, false, err
	}
	if ttl < time.Microsecond {
		return LeaseState{}, false, fmt.Errorf("%w: lease time to live %v: at least 1µs", ErrInvalid, ttl)
	}
	ev := make([]string, 0, len(evict))
	for _, e := range evict {
		if e != "" && e != owner {
			ev = append(ev, e)
		}
	}
	if len(ev) > MaxLeaseEvict {
		return LeaseState{}, false, fmt.Errorf("%w: %d holders to evict, at most %d", ErrInvalid, len(ev), MaxLeaseEvict)
	}
	stmt := db.q.acquireLease
	if len(ev) > 0 {
		stmt = db.d.acquireLease(len(ev))
	}
	args := make([]any, 0, 3+len(ev))
	args = append(args, clusterID, owner, ttl.Microseconds())
	for _, e := range ev {
		args = append(args, e)
	}
	// A refusal is read back in a second statement; when that read finds
	// the lease free after all (it expired or was released meanwhile),
	// the UPDATE runs again.
	for attempt := 0; attempt < 4; attempt++ {
		var epoch int64
		err := db.sql.QueryRowContext(ctx, stmt, args...).Scan(&epoch)
		if err == nil {
			return LeaseState{Holder: owner, Epoch: uint64(epoch), Remaining: ttl.Truncate(time.Microsecond)}, true, nil
		}
		if !errors.Is(err, sql.ErrNoRows) {
			return LeaseState{}, false, fmt.Errorf("configdb: %s: acquire lease %q: %w", db.d.provider, clusterID, err)
		}
		st, found, err := db.readLease(ctx, clusterID)
		if err != nil {
			return LeaseState{}, false, err
		}
		if !found {
			if _, err := db.sql.ExecContext(ctx, db.q.insertLease, clusterID); err != nil {
				return LeaseState{}, false, fmt.Errorf("configdb: %s: create lease row %q: %w", db.d.provider, clusterID, err)
			}
			continue
		}
		if st.Holder != "" && st.Holder != owner && !slices.Contains(ev, st.Holder) {
			return st, false, nil
		}
	}
	return LeaseState{}, false, fmt.Errorf("configdb: %s: acquire lease %q: the row kept changing", db.d.provider, clusterID)
}

// ReleaseLease frees the lease of clusterID if owner holds it (expired or
// not); released reports whether it did. A lease held by another owner is
// left as it is, with no error.
func (db *DB) ReleaseLease(ctx context.Context, clusterID, owner string) (released bool, err error) {
	if err := checkLeaseArgs(clusterID, owner); err != nil {
		return false, err
	}
	res, err := db.sql.ExecContext(ctx, db.q.releaseLease, clusterID, owner)
	if err != nil {
		return false, fmt.Errorf("configdb: %s: release lease %q: %w", db.d.provider, clusterID, err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return false, fmt.Errorf("configdb: %s: release lease %q: %w", db.d.provider, clusterID, err)
	}
	return n > 0, nil
}

// LeaseHolder reads the lease of clusterID without changing it. A cluster
// without a cluster_leases row has a free lease at epoch 0.
func (db *DB) LeaseHolder(ctx context.Context, clusterID string) (LeaseState, error) {
	if err := checkLeaseArgs(clusterID, "-"); err != nil {
		return LeaseState{}, err
	}
	st, _, err := db.readLease(ctx, clusterID)
	return st, err
}

func (db *DB) readLease(ctx context.Context, clusterID string) (st LeaseState, found bool, err error) {
	var (
		holder string
		epoch  int64
		left   int64
	)
	err = db.sql.QueryRowContext(ctx, db.q.readLease, clusterID).Scan(&holder, &epoch, &left)
	if errors.Is(err, sql.ErrNoRows) {
		return LeaseState{}, false, nil
	}
	if err != nil {
		return LeaseState{}, false, fmt.Errorf("configdb: %s: read lease %q: %w", db.d.provider, clusterID, err)
	}
	st.Epoch = uint64(epoch)
	if holder != "" && left > 0 {
		st.Holder = holder
		st.Remaining = time.Duration(left) * time.Microsecond
	}
	return st, true, nil
}

func checkLeaseArgs(clusterID, owner string) error {
	if clusterID == "" || len([]rune(clusterID)) > maxKeyLen {
		return fmt.Errorf("%w: lease cluster id %q: 1 to %d characters", ErrInvalid, clusterID, maxKeyLen)
	}
	if owner == "" || len([]rune(owner)) > maxKeyLen {
		return fmt.Errorf("%w: lease owner %q: 1 to %d characters", ErrInvalid, owner, maxKeyLen)
	}
	return nil
}
