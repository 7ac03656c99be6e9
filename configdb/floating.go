package configdb

import (
	"context"
	"fmt"
	"time"
)

// FloatingHeartbeat is one member's last heartbeat on a floating address's
// shared stream (floating_heartbeats, schema version 6).
type FloatingHeartbeat struct {
	Node string
	// Seq rises by 1 with every heartbeat of the node, across restarts.
	Seq uint64
	// EmittedAt is the sender's clock when it sent the heartbeat;
	// ObservedAt the database's clock when it stored it. Only ObservedAt
	// orders the stream.
	EmittedAt, ObservedAt time.Time
	// Claims: the sender holds the floating address.
	Claims bool
	// Draining, Healthy and Licensed are the sender's own eligibility
	// inputs: a planned failover or leave under way, its ServiceLevel in
	// the Healthy band, its licence under lease-majority (true without).
	Draining, Healthy, Licensed bool
	// Epoch is the ownership epoch the sender last acted under.
	Epoch uint64
	// MAC is the hardware address (or cloud resource id) the sender
	// answers for the address with.
	MAC string
}

// PutFloatingHeartbeat stores h for node of clusterID (h.Seq and
// h.ObservedAt are ignored) and returns the row as stored: its seq and the
// database's time.
func (db *DB) PutFloatingHeartbeat(ctx context.Context, clusterID string, h FloatingHeartbeat) (FloatingHeartbeat, error) {
	if err := checkLeaseArgs(clusterID, h.Node); err != nil {
		return FloatingHeartbeat{}, err
	}
	if len([]rune(h.MAC)) > maxKeyLen {
		return FloatingHeartbeat{}, fmt.Errorf("%w: heartbeat address %q: at most %d characters", ErrInvalid, h.MAC, maxKeyLen)
	}
	var seq, observed int64
	err := db.sql.QueryRowContext(ctx, db.q.putHeartbeat, clusterID, h.Node, h.EmittedAt.UnixMicro(), bit(h.Claims), int64(h.Epoch), h.MAC,
		bit(h.Draining), bit(h.Healthy), bit(h.Licensed)).Scan(&seq, &observed)
	if err != nil {
		return FloatingHeartbeat{}, fmt.Errorf("configdb: %s: floating heartbeat of %q in %q: %w", db.d.provider, h.Node, clusterID, err)
	}
	h.Seq, h.ObservedAt = uint64(seq), time.UnixMicro(observed).UTC()
	h.EmittedAt = time.UnixMicro(h.EmittedAt.UnixMicro()).UTC()
	return h, nil
}

// FloatingHeartbeats returns the last heartbeat of every member of
// clusterID, by node.
func (db *DB) FloatingHeartbeats(ctx context.Context, clusterID string) ([]FloatingHeartbeat, error) {
	if err := checkLeaseArgs(clusterID, "-"); err != nil {
		return nil, err
	}
	rows, err := db.sql.QueryContext(ctx, db.q.listHeartbeats, clusterID)
	if err != nil {
		return nil, fmt.Errorf("configdb: %s: floating heartbeats of %q: %w", db.d.provider, clusterID, err)
	}
	defer rows.Close()
	var out []FloatingHeartbeat
	for rows.Next() {
		var (
			h                          FloatingHeartbeat
			seq, em, ob, claims, epoch int64
			draining, healthy, lic     int64
		)
		if err := rows.Scan(&h.Node, &seq, &em, &ob, &claims, &epoch, &h.MAC, &draining, &healthy, &lic); err != nil {
			return nil, fmt.Errorf("configdb: %s: floating heartbeats of %q: %w", db.d.provider, clusterID, err)
		}
		h.Seq, h.Epoch, h.Claims = uint64(seq), uint64(epoch), claims != 0
		h.Draining, h.Healthy, h.Licensed = draining != 0, healthy != 0, lic != 0
		h.EmittedAt, h.ObservedAt = time.UnixMicro(em).UTC(), time.UnixMicro(ob).UTC()
		out = append(out, h)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("configdb: %s: floating heartbeats of %q: %w", db.d.provider, clusterID, err)
	}
	return out, nil
}

func bit(b bool) int {
	if b {
		return 1
	}
	return 0
}
