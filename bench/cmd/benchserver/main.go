// Command benchserver runs one OPC UA server implementation with N
// variables that all change every update interval, for the subscription
// benchmark (see bench/README.md).
//
// Its first stdout line is "listening <endpoint URL>", its second
// "nodes ns=<ns> first=<id> count=<N> rounds=<id>". It exits on SIGINT or
// SIGTERM, or by itself after -max-run, and then prints one "loop …" line
// with the update loop's statistics.
//
//	benchserver -impl=gopcua -items=10000 -update=100ms -addr=127.0.0.1:0
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/otopcua/otopcua/bench/internal/benchsrv"
)

func main() {
	impl := flag.String("impl", "gopcua", fmt.Sprintf("server implementation: one of %v", benchsrv.Impls))
	items := flag.Int("items", 1000, "number of variables")
	update := flag.Duration("update", 100*time.Millisecond, "interval at which every variable is set")
	addr := flag.String("addr", "127.0.0.1:0", "listen host:port (port 0: a free port)")
	maxRun := flag.Duration("max-run", 10*time.Minute, "exit by itself after this long")
	flag.Parse()

	if err := run(*impl, *items, *update, *addr, *maxRun); err != nil {
		fmt.Fprintln(os.Stderr, "benchserver:", err)
		os.Exit(1)
	}
}

func run(impl string, items int, update time.Duration, addr string, maxRun time.Duration) error {
	if update <= 0 {
		return fmt.Errorf("-update %v: want a positive duration", update)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	ctx, cancel := context.WithTimeout(ctx, maxRun)
	defer cancel()

	t0 := time.Now()
	srv, err := benchsrv.New(ctx, impl, benchsrv.Config{Items: items, Addr: addr})
	if err != nil {
		return err
	}
	defer srv.Close()
	fmt.Printf("listening %s\n", srv.URL())
	fmt.Printf("nodes ns=%d first=%d count=%d rounds=%d\n", benchsrv.Namespace, benchsrv.FirstID, items, benchsrv.RoundsID)
	fmt.Fprintf(os.Stderr, "benchserver: %s with %d variables ready in %v\n", impl, items, time.Since(t0).Round(time.Millisecond))

	go exitIfStuck(ctx, 5*time.Second)
	st := benchsrv.Run(ctx, srv, update)
	fmt.Printf("loop rounds=%d late=%d busy=%.3fs elapsed=%.3fs\n", st.Rounds, st.Late, st.Busy.Seconds(), st.Elapsed.Seconds())
	return nil
}

// exitIfStuck ends the process when shutdown has not finished grace after
// ctx is done: gopcua's subscription engine can deadlock the update loop
// (ChangeNotification blocked on a queue nobody drains), and the process
// must still stop by itself.
func exitIfStuck(ctx context.Context, grace time.Duration) {
	<-ctx.Done()
	time.Sleep(grace)
	fmt.Fprintf(os.Stderr, "benchserver: update loop or Close still running %v after shutdown began (server deadlocked?); exiting\n", grace)
	os.Exit(3)
}
