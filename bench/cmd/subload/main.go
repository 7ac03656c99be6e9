// Command subload subscribes to every variable of a benchserver, keeps
// Publish requests in flight and reports, for a measured window after a
// warm-up, the notifications per second it receives, their value age and
// the server process's CPU and RSS (see bench/README.md).
//
// It prints one human line and then one JSON line on stdout, and exits 0
// when the run succeeded, 1 when it failed (the JSON says why), 2 on bad
// flags. It never runs past the run's deadline.
//
//	subload -url opc.tcp://127.0.0.1:4840 -items 10000 -server-pid 1234
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/otopcua/otopcua/bench/internal/subload"
)

func main() {
	var c subload.Config
	var ns, first, rounds uint
	flag.StringVar(&c.URL, "url", "", "server endpoint URL (required)")
	flag.StringVar(&c.Impl, "impl", "", "label for the result (e.g. gopcua)")
	flag.IntVar(&c.Items, "items", 1000, "number of variables to monitor")
	flag.UintVar(&ns, "ns", 1, "namespace index of the variables")
	flag.UintVar(&first, "first", 1000, "numeric id of the first variable")
	flag.UintVar(&rounds, "rounds-id", 999, "numeric id of the server's update-round counter (0: do not read)")
	flag.DurationVar(&c.PublishingInterval, "publishing", 100*time.Millisecond, "publishing interval")
	flag.DurationVar(&c.SamplingInterval, "sampling", 100*time.Millisecond, "sampling interval of every item")
	flag.DurationVar(&c.UpdateInterval, "update", 0, "the server's update interval, for the expected rates (default: -sampling)")
	queue := flag.Uint("queue", 1, "queue size of every item")
	maxNotes := flag.Uint("max-notifications", 0, "MaxNotificationsPerPublish (0: no limit)")
	flag.IntVar(&c.InFlight, "inflight", 10, "Publish requests kept in flight")
	flag.IntVar(&c.Batch, "batch", 1000, "items per CreateMonitoredItems request")
	flag.DurationVar(&c.Warmup, "warmup", 5*time.Second, "warm-up before the measured window")
	flag.DurationVar(&c.Measure, "measure", 20*time.Second, "length of the measured window")
	flag.DurationVar(&c.CallTimeout, "call-timeout", 30*time.Second, "timeout of every service call but Publish")
	flag.DurationVar(&c.PublishTimeout, "publish-timeout", 10*time.Second, "timeout of one Publish request")
	flag.DurationVar(&c.StallTimeout, "stall-timeout", 10*time.Second, "fail when no Publish response arrives for this long")
	flag.IntVar(&c.ServerPID, "server-pid", 0, "server process to measure CPU and RSS of (0: none)")
	flag.Parse()
	c.Namespace, c.FirstID, c.RoundsID = uint16(ns), uint32(first), uint32(rounds)
	c.QueueSize, c.MaxNotificationsPerPublish = uint32(*queue), uint32(*maxNotes)

	full, err := c.Defaults()
	if err != nil {
		fmt.Fprintln(os.Stderr, "subload:", err)
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	// Run honours its own deadline; this one only guards against a bug in
	// it, so that the process always ends.
	go func() {
		time.Sleep(full.Deadline() + 10*time.Second)
		fmt.Fprintln(os.Stderr, "subload: run did not return by its deadline; exiting")
		os.Exit(1)
	}()

	res := subload.Run(ctx, c)
	fmt.Println(res.Human())
	b, _ := json.Marshal(res)
	fmt.Println(string(b))
	if !res.OK {
		os.Exit(1)
	}
}
