package subload

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/otopcua/otopcua/bench/internal/benchsrv"
)

// BenchmarkSubscription runs server and client in this process, one
// measured window per iteration, for a quick comparison while developing:
//
//	go test -run xxx -bench Subscription -benchtime 1x ./bench/internal/subload
//
// Because both sides share the process, "notes/proc-cpu-s" counts client
// CPU as well; the separate-process harness (cmd/subbench) is the
// reference.
func BenchmarkSubscription(b *testing.B) {
	for _, impl := range benchsrv.Impls {
		for _, items := range []int{1000, 10000} {
			b.Run(fmt.Sprintf("%s/items=%d", impl, items), func(b *testing.B) {
				benchSubscription(b, impl, items)
			})
		}
	}
}

func benchSubscription(b *testing.B, impl string, items int) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	srv, err := benchsrv.New(ctx, impl, benchsrv.Config{Items: items, Addr: "127.0.0.1:0"})
	if err != nil {
		b.Fatal(err)
	}
	defer srv.Close()
	go benchsrv.Run(ctx, srv, 100*time.Millisecond)
	var rate, p99, perCPU float64
	for b.Loop() {
		res := Run(ctx, Config{
			URL: srv.URL(), Impl: impl, Items: items,
			Warmup: time.Second, Measure: 3 * time.Second, ServerPID: os.Getpid(),
		})
		if !res.OK {
			b.Fatal(res.Error)
		}
		rate += res.NotificationsPerS
		p99 += res.AgeP99Ms
		perCPU += res.NotificationsPerCPU
	}
	n := float64(b.N)
	b.ReportMetric(rate/n, "notes/s")
	b.ReportMetric(p99/n, "p99-age-ms")
	b.ReportMetric(perCPU/n, "notes/proc-cpu-s")
}
