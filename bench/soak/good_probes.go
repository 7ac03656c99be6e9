package main

import (
	"context"
	"fmt"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/otopcua/otopcua/localdb"
	"github.com/otopcua/otopcua/localdb/hlc"
	"github.com/otopcua/otopcua/replication"
)

// The well-behaved side's probes beside its subscription.
const (
	anonymousEvery   = 2 * time.Second // an anonymous session, as a new client
	anonymousWithin  = time.Second
	passwordEvery    = 5 * time.Second // the Operator's right password, each surface
	replicationEvery = 5 * time.Second // a row through the host and back
	roundTripTimeout = 20 * time.Second
	replicatedTable  = "alarm_sf_events"
	syncedOutcome    = "synced"
)

// Names of the probes (Verdict reads them).
const (
	probeAnonymous   = "anonymous session"
	probeOPCUA       = "operator password (OPC UA)"
	probeAdmin       = "operator login (admin page)"
	probeReplication = "replication with the key"
)

// goodProbes are the well-behaved side's checks from 127.0.0.1 during the
// abuse: the right password of the Operator under attack, on OPC UA and
// on the admin page; an anonymous session; and a row of the harness's
// LocalDb replicated through the host's attacked sync port and back.
func goodProbes(endpoint string, h *Hardening, password string, peer *replicaPeer) []probe {
	login := httpFrom("127.0.0.1", false)
	return []probe{
		{name: probeAnonymous, every: anonymousEvery, want: "Good", within: anonymousWithin,
			do: func(ctx context.Context) string { return freshClient(ctx, endpoint) }},
		{name: probeOPCUA, every: passwordEvery, want: "Good",
			do: func(ctx context.Context) string { return userSession(ctx, endpoint, "127.0.0.1", h.User, password) }},
		{name: probeAdmin, every: passwordEvery, want: fmt.Sprint(http.StatusSeeOther),
			do: func(ctx context.Context) string { return adminLogin(ctx, login, h.HTTP, h.User, password) }},
		{name: probeReplication, every: replicationEvery, want: syncedOutcome, do: peer.roundTrip},
	}
}

// replicaPeer is the host's LocalDb:Peers entry, run by the harness: a
// Replicator with its own LocalDb and the right key. A row it enqueues is
// pulled by the host, which serves it on; the peer pulls it back from the
// host's sync port (the one the keyless streams attack), and counts it
// received. That is the honest "the right key still syncs" of one host.
type replicaPeer struct {
	db   *localdb.DB
	r    *replication.Replicator
	host string // the host's sync address
	rows int    // enqueued so far; one goroutine at a time enqueues
}

// replicationKey is the soak pair's LocalDb:Replication:ApiKey.
const replicationKey = "soak-replication-key-0123456789"

// startReplicaPeer opens a LocalDb in a temp dir and serves it on listen,
// pulling from host every 200 ms.
func startReplicaPeer(t testing.TB, listen, host string) *replicaPeer {
	t.Helper()
	ctx := context.Background()
	db, err := localdb.Open(ctx, filepath.Join(t.TempDir(), "peer.db"), nil, localdb.WithNodeID("soak-peer"))
	if err != nil {
		t.Fatalf("the harness's LocalDb: %v", err)
	}
	r, err := replication.New(replication.Options{Local: db, Listen: listen, Peers: []string{host}, APIKey: replicationKey,
		Interval: 200 * time.Millisecond})
	if err != nil {
		t.Fatalf("the harness's replication peer: %v", err)
	}
	if err := r.Start(ctx); err != nil {
		t.Fatalf("the harness's replication peer: %v", err)
	}
	p := &replicaPeer{db: db, r: r, host: host}
	t.Cleanup(p.stop)
	return p
}

func (p *replicaPeer) stop() {
	p.r.Stop()
	_ = p.db.Close()
}

// roundTrip enqueues one row and waits until the peer has pulled from
// the host's sync port everything up to that row's stamp (the row, or
// the host's tombstone of it once the host has forwarded it, which is
// newer): syncedOutcome, or what failed.
func (p *replicaPeer) roundTrip(ctx context.Context) string {
	p.rows++
	tid := fmt.Sprintf("soak-%d", p.rows)
	stamp, err := p.enqueue(ctx, tid)
	if err != nil {
		return outcome(err)
	}
	deadline := time.Now().Add(roundTripTimeout)
	for {
		cursor, err := p.db.Cursor(ctx, p.host, replicatedTable)
		if err == nil && !cursor.Less(stamp) {
			return syncedOutcome
		}
		if ctx.Err() != nil || time.Now().After(deadline) {
			return fmt.Sprintf("not back within %v: %s", roundTripTimeout, p.lastError())
		}
		pause(ctx, 20*time.Millisecond)
	}
}

// enqueue adds a queued event with transition id tid to the peer's
// LocalDb and returns the stamp of its change.
func (p *replicaPeer) enqueue(ctx context.Context, tid string) (hlc.Stamp, error) {
	before := p.db.Clock().Now()
	_, err := p.db.EnqueueEvent(ctx, localdb.QueuedEvent{ClusterID: clusterID, Alarm: "soak", TransitionID: tid,
		Payload: []byte(`{"t":"` + tid + `"}`)}, 0)
	if err != nil {
		return hlc.Stamp{}, fmt.Errorf("enqueue: %w", err)
	}
	cs, _, err := p.db.Changes(ctx, replicatedTable, before, localdb.MaxChanges)
	if err != nil {
		return hlc.Stamp{}, fmt.Errorf("changes: %w", err)
	}
	for _, c := range cs {
		if c.Stamp.Node == p.db.NodeID() && strings.Contains(c.Key, `"`+tid+`"`) {
			return c.Stamp, nil
		}
	}
	return hlc.Stamp{}, fmt.Errorf("the change of %s is not in the peer's LocalDb", tid)
}

// lastError is the peer's last error pulling from the host.
func (p *replicaPeer) lastError() string {
	for _, s := range p.r.Status().Peers {
		if s.Addr == p.host && s.LastError != "" {
			return s.LastError
		}
	}
	return "no error"
}

// firstSync waits until a first row has made the round trip (the host
// and the peer back off while the other is not up yet): syncedOutcome, or
// what failed after three tries.
func (p *replicaPeer) firstSync(ctx context.Context) string {
	var got string
	for range 3 {
		if got = p.roundTrip(ctx); got == syncedOutcome {
			break
		}
	}
	return got
}
