package configdb

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
)

// ErrStaleEpoch is wrapped by *StaleEpochError.
var ErrStaleEpoch = errors.New("configdb: alarm history drain refused: a newer Primary's epoch is stored")

// StaleEpochError is DrainAlarmHistory's error when the cluster's stored
// epoch is newer than the drain's: nothing of the call was stored.
// errors.Is(err, ErrStaleEpoch).
type StaleEpochError struct {
	ClusterID string
	// Epoch is the drain's, Newest the stored one (Newest > Epoch).
	Epoch, Newest uint64
	// Rows is how many rows the call offered.
	Rows int
}

func (e *StaleEpochError) Error() string {
	return fmt.Sprintf("configdb: %d alarm history rows of cluster %q refused: drained with redundancy epoch %d, a Primary with epoch %d has drained since",
		e.Rows, e.ClusterID, e.Epoch, e.Newest)
}

func (e *StaleEpochError) Unwrap() error { return ErrStaleEpoch }

// errStale ends the fenced transaction of a stale drain (rolled back).
var errStale = errors.New("stale epoch")

// DrainAlarmHistory is InsertAlarmHistory for the Primary's drain, fenced
// by its redundancy epoch: every row must be of one cluster, and each
// transaction that stores rows first runs the cluster's fence (raiseEpoch,
// one conditional statement): an epoch at least the newest stored for the
// cluster becomes the newest and the rows are stored as InsertAlarmHistory
// stores them; an older one stores nothing and the call returns a
// *StaleEpochError (errors.Is ErrStaleEpoch) — those rows belong to a
// Primary that has been replaced, whose successor stores its own copy of
// every transition. Epoch 0 (no redundancy snapshot has named the drainer:
// a node alone, before its first snapshot) is not fenced and raises
// nothing.
func (db *DB) DrainAlarmHistory(ctx context.Context, epoch uint64, rows []AlarmHistoryRow) (int, error) {
	if epoch == 0 || len(rows) == 0 {
		return db.InsertAlarmHistory(ctx, rows)
	}
	cluster := rows[0].ClusterID
	for _, r := range rows {
		if r.ClusterID != cluster {
			return 0, fmt.Errorf("%w: a fenced alarm history drain holds the rows of one cluster: %q and %q", ErrInvalid, cluster, r.ClusterID)
		}
	}
	if err := checkKey("alarm history ClusterID", cluster); err != nil {
		return 0, err
	}
	if epoch > 1<<63-1 {
		return 0, fmt.Errorf("%w: redundancy epoch %d is out of range", ErrInvalid, epoch)
	}
	n, err := db.insertAlarmHistory(ctx, rows, &epochFence{cluster: cluster, epoch: epoch})
	if errors.Is(err, errStale) {
		newest, rerr := db.NewestEpoch(ctx, cluster)
		if rerr != nil {
			return 0, rerr
		}
		return 0, &StaleEpochError{ClusterID: cluster, Epoch: epoch, Newest: newest, Rows: len(rows)}
	}
	return n, err
}

// NewestEpoch is the newest redundancy epoch stored for the cluster by a
// fenced drain (0: none).
func (db *DB) NewestEpoch(ctx context.Context, clusterID string) (uint64, error) {
	var e int64
	err := db.sql.QueryRowContext(ctx, db.q.newestEpoch, clusterID).Scan(&e)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return 0, nil
	case err != nil:
		return 0, fmt.Errorf("configdb: %s: read the redundancy epoch of %q: %w", db.d.provider, clusterID, err)
	}
	return uint64(e), nil
}

// epochFence is the fence a drain's transactions run first.
type epochFence struct {
	cluster string
	epoch   uint64
}

// hold runs the fence in tx: errStale when a newer epoch is stored.
func (f *epochFence) hold(ctx context.Context, tx *sql.Tx, q *queries) error {
	if f == nil {
		return nil
	}
	res, err := tx.ExecContext(ctx, q.raiseEpoch, f.cluster, int64(f.epoch))
	if err != nil {
		return err
	}
	if n, err := res.RowsAffected(); err != nil {
		return err
	} else if n == 0 {
		return errStale
	}
	return nil
}
