package lease_test

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"

	"github.com/otopcua/otopcua/cluster/lease"
	"github.com/otopcua/otopcua/cluster/lease/leasetest"
	"github.com/otopcua/otopcua/configdb"
	"github.com/otopcua/otopcua/internal/poll"
	"github.com/otopcua/otopcua/tests/etcd"
	"github.com/otopcua/otopcua/tests/pg"
)

func sleep(_ *testing.T, d time.Duration) { time.Sleep(d) }

func TestMemory(t *testing.T) {
	clock := clockwork.NewFakeClock()
	leasetest.Run(t, leasetest.Subject{
		New:  func(t *testing.T, id string) lease.Lease { return lease.NewMemory(id, 10*time.Second, clock) },
		Pass: func(_ *testing.T, d time.Duration) { clock.Advance(d) },
	})
}

// openDB opens and migrates a Config DB.
func openDB(t testing.TB, provider, dsn string) *configdb.DB {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	db, err := configdb.Open(ctx, provider, dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() })
	if err := db.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	return db
}

func configDBSubject(db *configdb.DB, ttl time.Duration) leasetest.Subject {
	return leasetest.Subject{
		New: func(t *testing.T, id string) lease.Lease {
			l, err := lease.NewConfigDB(db, id, ttl)
			if err != nil {
				t.Fatal(err)
			}
			return l
		},
		Pass: sleep,
	}
}

func sqliteDB(t testing.TB) *configdb.DB {
	return openDB(t, configdb.ProviderSQLite, "file:"+filepath.Join(t.TempDir(), "otopcua.db"))
}

func TestConfigDBSQLite(t *testing.T) {
	leasetest.Run(t, configDBSubject(sqliteDB(t), time.Second))
}

// TestConfigDBSQLiteTwoHandles: two handles on one file (two nodes sharing
// the Config DB) race to create and take a new cluster's lease: exactly one
// wins.
func TestConfigDBSQLiteTwoHandles(t *testing.T) {
	f := "file:" + filepath.Join(t.TempDir(), "otopcua.db")
	raceTwoNodes(t, openDB(t, configdb.ProviderSQLite, f), openDB(t, configdb.ProviderSQLite, f))
}

func raceTwoNodes(t *testing.T, dbA, dbB *configdb.DB) {
	for round := 0; round < 10; round++ {
		id := "race-" + string(rune('a'+round))
		la, _ := lease.NewConfigDB(dbA, id, 5*time.Second)
		lb, _ := lease.NewConfigDB(dbB, id, 5*time.Second)
		var wg sync.WaitGroup
		errs := make([]error, 2)
		start := make(chan struct{})
		for i, l := range []lease.Lease{la, lb} {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				_, errs[i] = l.Acquire(context.Background(), []string{"node-a", "node-b"}[i])
			}()
		}
		close(start)
		wg.Wait()
		won := 0
		for _, err := range errs {
			if err == nil {
				won++
			} else if !errors.Is(err, lease.ErrHeld) {
				t.Fatalf("round %d: %v", round, err)
			}
		}
		if won != 1 {
			t.Fatalf("round %d: %d winners (%v)", round, won, errs)
		}
	}
}

func TestConfigDBPostgres(t *testing.T) {
	srv := pg.Start(t)
	db := openDB(t, configdb.ProviderPostgres, srv.DSN())
	t.Run("Contract", func(t *testing.T) { leasetest.Run(t, configDBSubject(db, time.Second)) })
	t.Run("TwoHandles", func(t *testing.T) {
		raceTwoNodes(t, db, openDB(t, configdb.ProviderPostgres, srv.DSN()))
	})
}

// TestConfigDBPostgresOutage: with the server stopped, Acquire fails (not
// held) within its deadline; after the restart the same lease works again
// and the holder kept its epoch.
func TestConfigDBPostgresOutage(t *testing.T) {
	srv := pg.Start(t)
	db := openDB(t, configdb.ProviderPostgres, srv.DSN())
	l, err := lease.NewConfigDB(db, "plant-1", 30*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	g1, err := l.Acquire(context.Background(), "node-a")
	if err != nil {
		t.Fatal(err)
	}
	try := func(d time.Duration) (time.Duration, error) {
		ctx, cancel := context.WithTimeout(context.Background(), d)
		defer cancel()
		start := time.Now()
		_, err := l.Acquire(ctx, "node-a")
		return time.Since(start), err
	}
	for _, stop := range []struct {
		name       string
		down, up   func()
		deadline   time.Duration
		wantAnswer bool
	}{
		{"stopped", srv.Stop, srv.Start, time.Second, false},
		{"frozen", srv.Freeze, srv.Thaw, time.Second, false},
	} {
		stop.down()
		took, err := try(stop.deadline)
		if err == nil {
			t.Fatalf("%s: Acquire succeeded with the database down", stop.name)
		}
		if errors.Is(err, lease.ErrHeld) {
			t.Fatalf("%s: a down database answered HeldError: %v", stop.name, err)
		}
		// The bound is the caller's context, not a TCP timeout (minutes
		// for a frozen server): 2 s of slack absorb a loaded machine's
		// scheduling (1.55 s seen under -race at load 10) and still
		// fail an Acquire that ignores its context.
		if took > stop.deadline+2*time.Second {
			t.Fatalf("%s: Acquire took %v, deadline %v", stop.name, took, stop.deadline)
		}
		t.Logf("%s: Acquire failed after %v: %v", stop.name, took, err)
		stop.up()
		var g lease.Grant
		poll.CheckFor(t, 10*time.Second, 100*time.Millisecond, func() error {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			defer cancel()
			if g, err = l.Acquire(ctx, "node-a"); err != nil {
				return fmt.Errorf("%s: Acquire after the database came back: %w", stop.name, err)
			}
			return nil
		})
		if g.Epoch != g1.Epoch {
			t.Fatalf("%s: the holder's renewal after the outage changed the epoch %d → %d", stop.name, g1.Epoch, g.Epoch)
		}
		_, err = l.Acquire(context.Background(), "node-b")
		var he *lease.HeldError
		if !errors.As(err, &he) || he.Holder != "node-a" {
			t.Fatalf("%s: node-b after the outage: %v", stop.name, err)
		}
	}
}

// etcdTTL is etcd's effective minimum lease TTL with default timings.
const etcdTTL = 2 * time.Second

func etcdSubject(eps []string) leasetest.Subject {
	return leasetest.Subject{
		New: func(t *testing.T, id string) lease.Lease {
			l, err := lease.NewEtcd(eps, id, etcdTTL, nil)
			if err != nil {
				t.Fatal(err)
			}
			return l
		},
		Pass:   sleep,
		Expiry: time.Second, // the leader's lessor revokes expired leases every 500 ms
	}
}

func TestEtcd(t *testing.T) {
	c := etcd.Start(t, 3)
	t.Run("Contract", func(t *testing.T) { leasetest.Run(t, etcdSubject(c.Endpoints())) })

	// One member dies midway: acquire and renew go on through the others,
	// whichever endpoint comes first in the list.
	t.Run("MemberKilled", func(t *testing.T) {
		l, err := lease.NewEtcd(c.Endpoints(), "plant-kill", etcdTTL, nil)
		if err != nil {
			t.Fatal(err)
		}
		ctx := func() context.Context {
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
			t.Cleanup(cancel)
			return ctx
		}
		g1, err := l.Acquire(ctx(), "node-a")
		if err != nil {
			t.Fatal(err)
		}
		c.Members[0].Kill() // the first endpoint, the one the lease talks to
		defer func() {      // a failure below must not leave it dead for the next subtest
			if !c.Members[0].Running() {
				c.Members[0].Restart()
			}
		}()
		for i := 0; i < 3; i++ {
			start := time.Now()
			g, err := l.Acquire(ctx(), "node-a")
			if err != nil {
				t.Fatalf("renewal %d with %s dead: %v", i, c.Members[0].Name, err)
			}
			if g.Epoch != g1.Epoch {
				t.Fatalf("renewal changed the epoch %d → %d", g1.Epoch, g.Epoch)
			}
			t.Logf("renewal %d with a member dead: %v", i, time.Since(start))
			time.Sleep(etcdTTL / 2)
		}
		// A fresh lease (no endpoint remembered) with the dead member first.
		l2, _ := lease.NewEtcd(c.Endpoints(), "plant-kill", etcdTTL, nil)
		_, err = l2.Acquire(ctx(), "node-b")
		var he *lease.HeldError
		if !errors.As(err, &he) || he.Holder != "node-a" {
			t.Fatalf("node-b with a member dead: %v", err)
		}
		g2, err := l2.Acquire(ctx(), "node-b", "node-a")
		if err != nil || g2.Epoch <= g1.Epoch {
			t.Fatalf("node-b evicting node-a with a member dead: %+v, %v", g2, err)
		}
		c.Members[0].Restart()
		g3, err := l.Acquire(ctx(), "node-a")
		if !errors.As(err, &he) || he.Holder != "node-b" || he.Epoch != g2.Epoch {
			t.Fatalf("node-a after the restart: %+v %v", g3, err)
		}
	})

	// The whole contract with one member dead (the first endpoint).
	t.Run("ContractMemberDead", func(t *testing.T) {
		c.Members[0].Kill()
		defer c.Members[0].Restart()
		leasetest.Run(t, etcdSubject(c.Endpoints()))
	})

	// With every member dead Acquire fails (not held) within its deadline.
	t.Run("AllDead", func(t *testing.T) {
		l, _ := lease.NewEtcd(c.Endpoints(), "plant-dead", etcdTTL, nil)
		for _, m := range c.Members {
			m.Kill()
		}
		ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
		defer cancel()
		start := time.Now()
		_, err := l.Acquire(ctx, "node-a")
		if err == nil || errors.Is(err, lease.ErrHeld) {
			t.Fatalf("Acquire with etcd dead: %v", err)
		}
		if took := time.Since(start); took > time.Second {
			t.Fatalf("Acquire with etcd dead took %v", took)
		}
	})
}

func TestConstructorsRefuse(t *testing.T) {
	if _, err := lease.NewEtcd(nil, "c", 5*time.Second, nil); !errors.Is(err, lease.ErrInvalid) {
		t.Errorf("no endpoints: %v", err)
	}
	if _, err := lease.NewEtcd([]string{"127.0.0.1:2379"}, "c", 5*time.Second, nil); !errors.Is(err, lease.ErrInvalid) {
		t.Errorf("no scheme: %v", err)
	}
	if _, err := lease.NewEtcd([]string{"http://127.0.0.1:2379"}, "c", 500*time.Millisecond, nil); !errors.Is(err, lease.ErrInvalid) {
		t.Errorf("ttl below a second: %v", err)
	}
	if _, err := lease.NewEtcd([]string{"http://127.0.0.1:2379"}, "", 5*time.Second, nil); !errors.Is(err, lease.ErrInvalid) {
		t.Errorf("empty cluster id: %v", err)
	}
	if _, err := lease.NewConfigDB(nil, "c", time.Second); !errors.Is(err, lease.ErrInvalid) {
		t.Errorf("nil db: %v", err)
	}
}

func benchAcquireRenew(b *testing.B, l lease.Lease) {
	ctx := context.Background()
	if _, err := l.Acquire(ctx, "node-a"); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for range b.N {
		if _, err := l.Acquire(ctx, "node-a"); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkAcquireRenew(b *testing.B) {
	b.Run("sqlite", func(b *testing.B) {
		l, _ := lease.NewConfigDB(sqliteDB(b), "bench", 10*time.Second)
		benchAcquireRenew(b, l)
	})
	b.Run("postgres", func(b *testing.B) {
		srv := pg.Start(b)
		l, _ := lease.NewConfigDB(openDB(b, configdb.ProviderPostgres, srv.DSN()), "bench", 10*time.Second)
		benchAcquireRenew(b, l)
	})
	b.Run("etcd", func(b *testing.B) {
		c := etcd.Start(b, 3)
		l, _ := lease.NewEtcd(c.Endpoints(), "bench", 10*time.Second, nil)
		benchAcquireRenew(b, l)
	})
	b.Run("memory", func(b *testing.B) {
		benchAcquireRenew(b, lease.NewMemory("bench", 10*time.Second, nil))
	})
}
