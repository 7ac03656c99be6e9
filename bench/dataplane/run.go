package main

import (
	"context"
	"fmt"
	"io"
	"sync"
	"testing"
	"time"

	"github.com/otopcua/otopcua/bench/internal/fieldrig"
	"github.com/otopcua/otopcua/bench/internal/measure"
	"github.com/otopcua/otopcua/tests/procs"
)

// Config is one case of the benchmark.
type Config struct {
	// Tags over Devices (Tags must be a multiple of Devices).
	Tags, Devices int
	// Poll is every device's poll interval.
	Poll time.Duration
	// Publishing and Sampling are the subscription's publishing interval
	// and every item's requested sampling interval (0: every change).
	Publishing, Sampling time.Duration
	// Inflight is the number of Publish requests outstanding.
	Inflight int
	// Idle is the length of the before-deployment and the polling-only
	// windows.
	Idle time.Duration
	// Warmup runs the changer before the latency window; Duration is the
	// window.
	Warmup, Duration time.Duration
	// Changes registers are changed every ChangeEvery.
	Changes     int
	ChangeEvery time.Duration
	// Writes is the number of confirmed writes of the write part.
	Writes int
	// Progress receives a line per step; nil discards them.
	Progress io.Writer
}

// Name is the case's name, "<tags>x<devices>".
func (c Config) Name() string { return fmt.Sprintf("%dx%d", c.Tags, c.Devices) }

// Check reports what is wrong with c, nil when nothing.
func (c Config) Check() error {
	switch {
	case c.Devices < 1 || c.Tags < 2 || c.Tags%c.Devices != 0 || c.Tags/c.Devices > 65536:
		return fmt.Errorf("case %s: tags must be ≥ 2 and a multiple of devices (≥ 1), at most 65,536 per device", c.Name())
	case c.Poll < 10*time.Millisecond || c.Publishing <= 0 || c.Sampling < 0:
		return fmt.Errorf("case %s: -poll must be ≥ 10ms, -publishing > 0, -sampling ≥ 0", c.Name())
	case c.Inflight < 1 || c.Idle <= 0 || c.Warmup < 0 || c.Duration <= 0:
		return fmt.Errorf("case %s: -inflight ≥ 1, -idle and -duration > 0, -warmup ≥ 0", c.Name())
	case c.Changes < 1 || c.ChangeEvery <= 0 || c.Writes < 1:
		return fmt.Errorf("case %s: changes per tick ≥ 1, -change-every > 0, -writes ≥ 1", c.Name())
	}
	return nil
}

// Result is everything one case measured.
type Result struct {
	Case      string          `json:"case"`
	Tags      int             `json:"tags"`
	Devices   int             `json:"devices"`
	PollMs    float64         `json:"poll_ms"`
	PubMs     float64         `json:"publishing_ms"`
	SampMs    float64         `json:"sampling_ms"`
	PID       int             `json:"pid"`
	Latency   LatencyFigures  `json:"latency"`
	Write     WriteFigures    `json:"write"`
	Resources ResourceFigures `json:"resources"`
}

// LatencyFigures are the results of the latency part.
type LatencyFigures struct {
	TrackerCounts
	// Unnotified are changes of the window never notified (by the end of
	// the grace period after it).
	Unnotified uint64 `json:"unnotified"`
	// Device change → notification receipt.
	P50Ms float64 `json:"p50_ms"`
	P90Ms float64 `json:"p90_ms"`
	P99Ms float64 `json:"p99_ms"`
	MaxMs float64 `json:"max_ms"`
	// The two parts: change → SourceTimestamp (the driver read it) and
	// SourceTimestamp → receipt.
	ToSourceP50Ms    float64 `json:"to_source_p50_ms"`
	ToSourceP99Ms    float64 `json:"to_source_p99_ms"`
	SourceToRcvP50Ms float64 `json:"source_to_receipt_p50_ms"`
	SourceToRcvP99Ms float64 `json:"source_to_receipt_p99_ms"`
	// Negative counts durations below zero (clock trouble).
	Negative uint64 `json:"negative"`
	// ChangesPerS is the rate of changes made in the window.
	ChangesPerS float64 `json:"changes_per_s"`
	Messages    uint64  `json:"messages"`
	Keepalives  uint64  `json:"keepalives"`
	Faults      uint64  `json:"publish_faults"`
	FirstFault  string  `json:"first_fault,omitempty"`
}

// grace is how long after the window the changes made in it may still be
// notified.
const grace = 3 * time.Second

// Run runs one case: devices and host, the before-deployment window, the
// deployment, the polling-only window, the subscription, the warm-up and
// the latency window (with the host's CPU and RSS), then the writes while
// the polling, the subscription and the changes go on. Setup failures end
// t; the case's findings are in the Result.
func Run(t testing.TB, c Config) Result {
	t.Helper()
	progress := c.Progress
	if progress == nil {
		progress = io.Discard
	}
	say := func(format string, args ...any) {
		fmt.Fprintf(progress, "dataplane %s: "+format+"\n", append([]any{c.Name()}, args...)...)
	}
	l := fieldrig.Layout{Devices: c.Devices, PerDevice: c.Tags / c.Devices}
	res := Result{Case: c.Name(), Tags: c.Tags, Devices: c.Devices, PollMs: msOf(c.Poll), PubMs: msOf(c.Publishing), SampMs: msOf(c.Sampling),
		Resources: ResourceFigures{Tags: c.Tags}}

	r := startRig(t, c.Devices)
	res.PID = r.node.PID()
	say("host pid %d at %s, %d devices; %v before the deployment", res.PID, r.node.Endpoint(), c.Devices, c.Idle)
	res.Resources.Before = watch(t, res.PID, c.Idle)

	doc, err := fieldrig.Document(clusterID, l, fieldrig.Addrs(r.devs), c.Poll, writeTag)
	if err != nil {
		t.Fatal(err)
	}
	r.deploy(doc)
	sess := r.connect("bench dataplane")
	ns, err := fieldrig.Namespace(sess.s, clusterID)
	if err != nil {
		t.Fatal(err)
	}
	nodes := fieldrig.NodeIDs(ns, l)
	procs.CheckFor(t, 60*time.Second, 200*time.Millisecond, func() error { return fieldrig.AllGood(sess.s, nodes) })
	say("deployed and every tag Good; %v polling only", c.Idle)
	res.Resources.Polling = watch(t, res.PID, c.Idle)

	k := NewTracker(c.Tags)
	sub, err := subscribe(sess, nodes, SubParams{Publishing: c.Publishing, Sampling: c.Sampling, Inflight: c.Inflight}, k)
	if err != nil {
		t.Fatal(err)
	}
	ctx, stop := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	defer func() { stop(); wg.Wait() }()
	wg.Add(1)
	go func() { defer wg.Done(); sub.run(ctx, c.Inflight) }()
	procs.CheckFor(t, 60*time.Second, 100*time.Millisecond, func() error {
		if n := k.Seen(); n < c.Tags {
			return fmt.Errorf("%d of %d items had their first notification", n, c.Tags)
		}
		return nil
	})
	ch := &changer{l: l, devs: r.devs, k: k, order: Rotation(l), per: c.Changes, every: c.ChangeEvery}
	wg.Add(1)
	go func() { defer wg.Done(); ch.run(ctx) }()
	say("subscribed (%d items); warm-up %v, then %v measured", c.Tags, c.Warmup, c.Duration)
	time.Sleep(c.Warmup) // the warm-up is a phase, not an assertion

	k.SetMeasuring(true)
	res.Resources.Case = watch(t, res.PID, c.Duration)
	k.SetMeasuring(false)
	deadline := time.Now().Add(grace)
	for k.Open() > 0 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	res.Latency = k.Figures()
	res.Latency.ChangesPerS = float64(res.Latency.Changes) / res.Resources.Case.Seconds
	res.Latency.Messages, res.Latency.Keepalives = sub.messages.Load(), sub.keepalives.Load()
	res.Latency.Faults, res.Latency.FirstFault = sub.faults.Count(), sub.faults.First()
	res.Resources.perTenK()
	say("latency p50 %.1f ms, p99 %.1f ms over %d changes; %d writes next", res.Latency.P50Ms, res.Latency.P99Ms, res.Latency.Notified, c.Writes)

	d, reg := l.Of(writeTag)
	res.Write = measureWrites(sess, nodes[writeTag], r.devs[d], reg, c.Writes, 1)
	say("writes: register p99 %.2f ms, response p99 %.2f ms", res.Write.RegisterP99Ms, res.Write.ResponseP99Ms)
	if code, exited := r.node.Exited(); exited {
		t.Fatalf("the host exited (code %d) during the case:\n%s", code, r.node.Log())
	}
	return res
}

// watch is watchHost; a host that cannot be read ends the case.
func watch(t testing.TB, pid int, d time.Duration) Window {
	t.Helper()
	w, err := watchHost(pid, d)
	if err != nil {
		t.Fatalf("reading the host process: %v", err)
	}
	return w
}

// machine is the machine line of the output.
func machine() string { return measure.Machine(time.Now()) }
