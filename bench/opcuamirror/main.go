// Command opcuamirror measures the OPC UA client driver ("driver":
// "opcua") on real processes: a node-opcua upstream (tests/interop/
// upstream.mjs) whose N Double variables all take the next tick's value
// every -period, one `otopcua host` mirroring them (sampling interval 0,
// publishing -publishing), and one client subscription on our node to
// every mirrored tag (sampling 0, queue 10, publishing -publishing, 4
// Publish requests outstanding).
//
// Per case (each N of -items), on a fresh upstream and host:
//
//  1. Mirroring only (no client subscription): the host's and the
//     upstream's CPU over -idle, the host's RSS.
//  2. After -warmup, over -duration: every notification at our client is
//     matched by value (each variable's ticks must arrive consecutively: a
//     gap is a lost change, a repeat a duplicate) and timed from the
//     upstream's SourceTimestamp (set by node-opcua when the tick's value
//     is written) to the Publish response's receipt; the host's and the
//     upstream's CPU and the host's RSS meanwhile.
//
// Output: a Markdown table and one JSON line per case. The upstream is
// node-opcua: at 10,000 variables every 100 ms it is the bottleneck
// (DESIGN.md: node-opcua serves 33–50k notifications/s at 10k items),
// which the upstream CPU column shows.
//
// Usage:
//
//	go run ./bench/opcuamirror
//	go run ./bench/opcuamirror -items 1000,10000 -period 100ms -publishing 100ms -duration 20s
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gopcua/opcua/ua"

	"github.com/otopcua/otopcua/bench/internal/fieldrig"
	"github.com/otopcua/otopcua/bench/internal/measure"
	"github.com/otopcua/otopcua/opcua/uaclient"
	"github.com/otopcua/otopcua/tests/nodescript"
	"github.com/otopcua/otopcua/tests/procs"
)

const clusterID = "bench"

// Config is one run's settings.
type Config struct {
	Items                        int
	Upstreams                    int // upstream servers sharing the Items, one device each
	Period, Publishing           time.Duration
	Idle, Warmup, Duration, Wait time.Duration
}

// Result is one case's figures.
type Result struct {
	Items        int     `json:"items"`
	Upstreams    int     `json:"upstreams"`
	PeriodMs     int64   `json:"period_ms"`
	PublishingMs int64   `json:"publishing_ms"`
	Expected     int64   `json:"changes_expected"`
	Notified     int64   `json:"notified"`
	Lost         int64   `json:"lost"`
	Repeated     int64   `json:"repeated"`
	P50Ms        float64 `json:"p50_ms"`
	P99Ms        float64 `json:"p99_ms"`
	MaxMs        float64 `json:"max_ms"`
	// UpP50Ms, UpP99Ms: upstream SourceTimestamp → our ServerTimestamp
	// (the upstream's publishing and the driver); OurP50Ms, OurP99Ms: our
	// ServerTimestamp → receipt (our server's publishing and the client).
	UpP50Ms        float64 `json:"upstream_leg_p50_ms"`
	UpP99Ms        float64 `json:"upstream_leg_p99_ms"`
	OurP50Ms       float64 `json:"our_leg_p50_ms"`
	OurP99Ms       float64 `json:"our_leg_p99_ms"`
	HostIdleCPU    float64 `json:"host_cpu_pct_mirroring"`
	HostCPU        float64 `json:"host_cpu_pct_with_client"`
	HostRSSMiB     float64 `json:"host_rss_mib"`
	UpstreamCPU    float64 `json:"upstream_cpu_pct"`
	UpstreamSessns int     `json:"upstream_sessions_of_host"`
}

func main() {
	var c Config
	items := flag.String("items", "1000,10000", "comma-separated mirrored item counts, one case each")
	flag.DurationVar(&c.Period, "period", 100*time.Millisecond, "every upstream variable changes this often")
	flag.DurationVar(&c.Publishing, "publishing", 100*time.Millisecond, "publishing interval of the driver's upstream subscription and of our client's")
	flag.DurationVar(&c.Idle, "idle", 5*time.Second, "mirroring-only window")
	flag.DurationVar(&c.Warmup, "warmup", 5*time.Second, "client subscription before the measured window")
	flag.DurationVar(&c.Duration, "duration", 20*time.Second, "measured window")
	flag.IntVar(&c.Upstreams, "upstreams", 1, "upstream servers (node-opcua processes, one opcua device each) sharing the items: one node-opcua process saturates its core near 10,000 items every 100 ms")
	verbose := flag.Bool("v", false, "log what the harness does")
	flag.Parse()
	if !*verbose {
		log.SetOutput(io.Discard)
	}
	if c.Upstreams < 1 || c.Upstreams > 16 {
		fmt.Fprintf(os.Stderr, "opcuamirror: -upstreams: %d is not 1..16\n", c.Upstreams)
		os.Exit(2)
	}
	go procs.StopOnSignal()
	var results []Result
	for _, s := range strings.Split(*items, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil || n <= 0 || n > 10000 || n%c.Upstreams != 0 {
			fmt.Fprintf(os.Stderr, "opcuamirror: -items: %q is not 1..10000 and a multiple of -upstreams\n", s)
			os.Exit(2)
		}
		cc := c
		cc.Items = n
		var r Result
		if err := procs.Run(fmt.Sprintf("bench-opcuamirror-%d", n), func(t testing.TB) { r = run(t, cc) }); err != nil {
			fmt.Fprintf(os.Stderr, "opcuamirror: case %d: %v\n", n, err)
			os.Exit(2)
		}
		results = append(results, r)
	}
	fmt.Printf("bench/opcuamirror, %s\n", measure.Machine(time.Now()))
	fmt.Printf("upstream: %d node-opcua server(s) sharing the items, every variable changes every %v; driver and client publishing %v, sampling 0; %v warm-up, %v measured\n\n",
		c.Upstreams, c.Period, c.Publishing, c.Warmup, c.Duration)
	fmt.Println("| items | changes/s | notified of expected | lost | repeated | p50 ms | p99 ms | max ms | upstream leg p50 / p99 ms | our leg p50 / p99 ms | host CPU % mirroring | host CPU % with client | host RSS MiB | upstream CPU % |")
	fmt.Println("| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
	for _, r := range results {
		fmt.Printf("| %d | %.0f | %d of %d | %d | %d | %.1f | %.1f | %.1f | %.0f / %.0f | %.0f / %.0f | %.1f | %.1f | %.1f | %.1f |\n",
			r.Items, float64(r.Items)*float64(time.Second)/float64(c.Period), r.Notified, r.Expected, r.Lost, r.Repeated,
			r.P50Ms, r.P99Ms, r.MaxMs, r.UpP50Ms, r.UpP99Ms, r.OurP50Ms, r.OurP99Ms, r.HostIdleCPU, r.HostCPU, r.HostRSSMiB, r.UpstreamCPU)
	}
	fmt.Println()
	for _, r := range results {
		b, _ := json.Marshal(r)
		fmt.Println(string(b))
	}
}

// run is one case.
func run(t testing.TB, c Config) Result {
	per := c.Items / c.Upstreams
	ups := make([]*nodescript.Upstream, c.Upstreams)
	urls, pids := make([]string, c.Upstreams), make([]int, c.Upstreams)
	for i := range ups {
		ups[i] = nodescript.StartUpstream(t, map[string]any{"vars": per, "periodMs": c.Period.Milliseconds()})
		urls[i], pids[i] = ups[i].URL, ups[i].PID()
	}
	dir := t.TempDir()
	cfg := procs.BaseConfig("mirror", procs.NewPorts(t))
	cfg["Node"].(map[string]any)["ClusterId"] = clusterID
	cfg["ConfigDb"] = map[string]any{"Provider": "sqlite", "ConnectionString": "file:" + filepath.Join(dir, "config.db")}
	cfg["Telemetry"].(map[string]any)["LogLevel"] = "info"
	node := procs.StartWith(t, "mirror", cfg, procs.Options{Binary: procs.PlainBinary(t)})
	node.WaitReady(60 * time.Second)
	procs.DeployWith(t, procs.PlainBinary(t), cfg, document(urls, c))
	node.WaitDeployed(1)

	s := connect(t, node.Endpoint())
	ns, err := fieldrig.Namespace(s.s, clusterID)
	if err != nil {
		t.Fatal(err)
	}
	nodes := make([]*ua.NodeID, c.Items)
	for i := range nodes {
		nodes[i] = ua.NewStringNodeID(ns, fmt.Sprintf("up%d/V%d", i/per, i%per))
	}
	procs.CheckFor(t, 60*time.Second, 200*time.Millisecond, func() error {
		for i := per - 1; i < len(nodes); i += per {
			if dv := s.read(nodes[i]); dv.Status != ua.StatusOK {
				return fmt.Errorf("%v %v", nodes[i], dv.Status)
			}
		}
		return nil
	})
	r := Result{Items: c.Items, Upstreams: c.Upstreams, PeriodMs: c.Period.Milliseconds(), PublishingMs: c.Publishing.Milliseconds(), UpstreamSessns: 1}
	idle := watch(t, node.PID(), pids, c.Idle)
	r.HostIdleCPU = idle.host

	m := newMatcher(c.Items)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	s.subscribe(t, ctx, nodes, c.Publishing, m)
	time.Sleep(c.Warmup)
	m.start()
	w := watch(t, node.PID(), pids, c.Duration)
	m.stop()
	r.HostCPU, r.HostRSSMiB, r.UpstreamCPU = w.host, w.rss, w.upstream
	r.Expected = int64(c.Items) * int64(c.Duration/c.Period)
	m.mu.Lock()
	r.Notified, r.Lost, r.Repeated = m.notified, m.lost, m.repeated
	r.P50Ms, r.P99Ms, r.MaxMs = ms(m.hist.Quantile(0.5)), ms(m.hist.Quantile(0.99)), ms(m.hist.Max())
	r.UpP50Ms, r.UpP99Ms = ms(m.upHist.Quantile(0.5)), ms(m.upHist.Quantile(0.99))
	r.OurP50Ms, r.OurP99Ms = ms(m.ourHist.Quantile(0.5)), ms(m.ourHist.Quantile(0.99))
	m.mu.Unlock()
	return r
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// document is the deployment: one opcua device per upstream ("up0",
// "up1", …), each mirroring every variable of its upstream.
func document(urls []string, c Config) string {
	per := c.Items / len(urls)
	tags := make([]string, per)
	for i := range tags {
		tags[i] = fmt.Sprintf(`{"name": "V%d", "nodeId": "ns=2;s=V%d", "type": "float64", "samplingInterval": "0s"}`, i, i)
	}
	devices := make([]string, len(urls))
	for d, url := range urls {
		devices[d] = fmt.Sprintf(`{"name": "up%d", "driver": "opcua", "endpoint": %q, "publishingInterval": %q, "timeout": "5s", "tags": [%s]}`,
			d, url, c.Publishing.String(), strings.Join(tags, ","))
	}
	return fmt.Sprintf(`{"clusterId": %q, "devices": [%s]}`, clusterID, strings.Join(devices, ","))
}

// window is a measured stretch.
type window struct{ host, upstream, rss float64 }

// watch measures the host's and the upstreams' CPU (% of one core, the
// upstreams summed) over d and the host's mean RSS.
func watch(t testing.TB, host int, upstreams []int, d time.Duration) window {
	cpu := func(pids []int) time.Duration {
		var sum time.Duration
		for _, pid := range pids {
			c, err := measure.CPUTime(pid)
			if err != nil {
				t.Fatalf("cpu time of %d: %v", pid, err)
			}
			sum += c
		}
		return sum
	}
	h0, u0 := cpu([]int{host}), cpu(upstreams)
	start := time.Now()
	var sum uint64
	var n int
	for time.Since(start) < d {
		if rss, err := measure.RSS(host); err == nil {
			sum += rss
			n++
		}
		time.Sleep(250 * time.Millisecond)
	}
	h1, u1 := cpu([]int{host}), cpu(upstreams)
	wall := time.Since(start)
	return window{host: measure.CPUPercent(h1-h0, wall), upstream: measure.CPUPercent(u1-u0, wall),
		rss: float64(sum) / float64(max(n, 1)) / (1 << 20)}
}

// matcher checks every notification by value: variable i's ticks must
// come one after the other. Messages are taken in sequence-number order
// (several Publish loops receive them; two may hand theirs over out of
// order).
type matcher struct {
	mu                       sync.Mutex
	on                       bool
	last                     []float64
	notified, lost, repeated int64
	// hist: upstream SourceTimestamp → receipt; upHist: SourceTimestamp →
	// our ServerTimestamp (the upstream and the driver); ourHist: our
	// ServerTimestamp → receipt (our server and the client).
	hist, upHist, ourHist *measure.Histogram

	next    uint32             // the next sequence number to take; 0 before the first
	pending map[uint32]message // received ahead of next
}

// message is one NotificationMessage's data changes.
type message struct {
	at    time.Time
	items []*ua.MonitoredItemNotification
}

func newMatcher(n int) *matcher {
	h := func() *measure.Histogram { return measure.NewHistogram(time.Millisecond, 30*time.Second) }
	return &matcher{last: make([]float64, n), hist: h(), upHist: h(), ourHist: h(), pending: map[uint32]message{}}
}

// message takes one message: in order, or kept until its turn.
func (m *matcher) message(seq uint32, msg message) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.next == 0 {
		m.next = seq
	}
	m.pending[seq] = msg
	for {
		p, ok := m.pending[m.next]
		if !ok {
			return
		}
		delete(m.pending, m.next)
		m.next++
		for _, it := range p.items {
			m.offer(it.ClientHandle, it.Value, p.at)
		}
	}
}

func (m *matcher) start() { m.mu.Lock(); m.on = true; m.mu.Unlock() }
func (m *matcher) stop()  { m.mu.Lock(); m.on = false; m.mu.Unlock() }

// offer matches one value. mu must be held.
func (m *matcher) offer(handle uint32, dv *ua.DataValue, at time.Time) {
	if dv == nil || dv.Value == nil {
		return
	}
	v, ok := dv.Value.Value().(float64)
	if !ok || int(handle) >= len(m.last) {
		return
	}
	prev := m.last[handle]
	m.last[handle] = v
	if !m.on || prev == 0 {
		return
	}
	m.notified++
	switch {
	case v <= prev:
		m.repeated++
	case v > prev+1:
		m.lost += int64(v - prev - 1)
	}
	if !dv.SourceTimestamp.IsZero() {
		m.hist.Add(at.Sub(dv.SourceTimestamp))
		if !dv.ServerTimestamp.IsZero() {
			m.upHist.Add(dv.ServerTimestamp.Sub(dv.SourceTimestamp))
			m.ourHist.Add(at.Sub(dv.ServerTimestamp))
		}
	}
}

// session is a raw session on our node.
type session struct {
	ch *uaclient.Channel
	s  *uaclient.Session
}

func connect(t testing.TB, endpoint string) *session {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	ch, err := uaclient.Dial(ctx, endpoint, uaclient.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ch.Close() })
	s, err := uaclient.NewSession(ctx, ch, "opcuamirror", time.Minute, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	return &session{ch: ch, s: s}
}

func (s *session) call(ctx context.Context, req ua.Request) (ua.Response, error) {
	return s.ch.Call(ctx, req, s.s.Auth(), 30*time.Second)
}

func (s *session) read(n *ua.NodeID) *ua.DataValue {
	resp, err := s.call(context.Background(), &ua.ReadRequest{NodesToRead: []*ua.ReadValueID{{NodeID: n, AttributeID: ua.AttributeIDValue, DataEncoding: &ua.QualifiedName{}}}})
	if err != nil {
		return &ua.DataValue{Status: ua.StatusBadCommunicationError}
	}
	return resp.(*ua.ReadResponse).Results[0]
}

// subscribe monitors nodes (sampling 0, queue 10) and feeds m from 4
// Publish loops until ctx ends.
func (s *session) subscribe(t testing.TB, ctx context.Context, nodes []*ua.NodeID, publishing time.Duration, m *matcher) {
	cs, err := s.call(ctx, &ua.CreateSubscriptionRequest{RequestedPublishingInterval: float64(publishing.Milliseconds()),
		RequestedLifetimeCount: 600, RequestedMaxKeepAliveCount: 20, PublishingEnabled: true})
	if err != nil {
		t.Fatal(err)
	}
	id := cs.(*ua.CreateSubscriptionResponse).SubscriptionID
	for start := 0; start < len(nodes); start += 1000 {
		end := min(start+1000, len(nodes))
		items := make([]*ua.MonitoredItemCreateRequest, 0, end-start)
		for i := start; i < end; i++ {
			items = append(items, &ua.MonitoredItemCreateRequest{
				ItemToMonitor:       &ua.ReadValueID{NodeID: nodes[i], AttributeID: ua.AttributeIDValue, DataEncoding: &ua.QualifiedName{}},
				MonitoringMode:      ua.MonitoringModeReporting,
				RequestedParameters: &ua.MonitoringParameters{ClientHandle: uint32(i), SamplingInterval: 0, QueueSize: 10, DiscardOldest: true, Filter: ua.NewExtensionObject(nil)},
			})
		}
		if _, err := s.call(ctx, &ua.CreateMonitoredItemsRequest{SubscriptionID: id, TimestampsToReturn: ua.TimestampsToReturnBoth, ItemsToCreate: items}); err != nil {
			t.Fatal(err)
		}
	}
	for k := 0; k < 4; k++ {
		go func() {
			var acks []*ua.SubscriptionAcknowledgement
			for ctx.Err() == nil {
				resp, err := s.call(ctx, &ua.PublishRequest{SubscriptionAcknowledgements: acks})
				if err != nil {
					return
				}
				at := time.Now()
				pr := resp.(*ua.PublishResponse)
				acks = nil
				if pr.NotificationMessage == nil {
					continue
				}
				if len(pr.NotificationMessage.NotificationData) > 0 {
					acks = []*ua.SubscriptionAcknowledgement{{SubscriptionID: pr.SubscriptionID, SequenceNumber: pr.NotificationMessage.SequenceNumber}}
				}
				msg := message{at: at}
				for _, eo := range pr.NotificationMessage.NotificationData {
					if dcn, ok := eo.Value.(*ua.DataChangeNotification); ok {
						msg.items = append(msg.items, dcn.MonitoredItems...)
					}
				}
				if len(msg.items) > 0 {
					m.message(pr.NotificationMessage.SequenceNumber, msg)
				}
			}
		}()
	}
}
