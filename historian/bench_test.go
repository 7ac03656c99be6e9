package historian

import (
	"context"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"

	"github.com/otopcua/otopcua/configdb"
	"github.com/otopcua/otopcua/localdb"
	"github.com/otopcua/otopcua/tests/pg"
)

// go test -run '^$' -bench EnqueueDrain -benchtime 20x ./historian/
//
// One op: 256 transitions enqueued (each its own LocalDb transaction,
// committed to the WAL), then one drain tick that writes them to
// alarm_history in one Config DB transaction and deletes them from the
// queue. events/s counts transitions through the whole chain.

func BenchmarkEnqueueDrain(b *testing.B) {
	b.Run("sqlite", func(b *testing.B) {
		benchEnqueueDrain(b, configdb.ProviderSQLite, "file:"+b.TempDir()+"/otopcua.db")
	})
	b.Run("postgres", func(b *testing.B) {
		benchEnqueueDrain(b, configdb.ProviderPostgres, pg.Start(b).DSN())
	})
}

func benchEnqueueDrain(b *testing.B, provider, dsn string) {
	ctx := context.Background()
	central, err := configdb.Open(ctx, provider, dsn)
	if err != nil {
		b.Fatal(err)
	}
	defer central.Close()
	if err := central.Migrate(ctx); err != nil {
		b.Fatal(err)
	}
	local, err := localdb.Open(ctx, b.TempDir()+"/local.db", nil)
	if err != nil {
		b.Fatal(err)
	}
	defer local.Close()
	h, err := New(Options{ClusterID: "site-a", Local: local, Central: central, Clock: clockwork.NewFakeClock(),
		Gate: func() (bool, string, uint64) { return true, "", 0 }})
	if err != nil {
		b.Fatal(err)
	}
	const perOp = DefaultBatchSize
	next := 0
	var inEnqueue, inDrain time.Duration
	for b.Loop() {
		start := time.Now()
		for range perOp {
			if err := h.Enqueue(ctx, ev(next)); err != nil {
				b.Fatal(err)
			}
			next++
		}
		mid := time.Now()
		h.tick(ctx)
		inEnqueue, inDrain = inEnqueue+mid.Sub(start), inDrain+time.Since(mid)
		if st := h.Status(); st.QueueDepth != 0 || st.LastError != "" {
			b.Fatalf("after the drain: %+v", st)
		}
	}
	b.ReportMetric(float64(next)/b.Elapsed().Seconds(), "events/s")
	b.ReportMetric(float64(inEnqueue.Microseconds())/float64(next), "µs/enqueue")
	b.ReportMetric(float64(inDrain.Microseconds())/float64(next), "µs/drained-event")
}
