package subload

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"sync"
	"time"

	"github.com/gopcua/opcua/ua"

	"github.com/otopcua/otopcua/bench/internal/measure"
	"github.com/otopcua/otopcua/opcua/uaclient"
)

// Histogram resolution and range of value ages.
const (
	ageBucket = 100 * time.Microsecond
	ageLimit  = 120 * time.Second
)

// Run performs one benchmark run against cfg.URL and returns its result.
// It returns within cfg.Deadline() (after Defaults) whatever the server
// does; a failed run has OK false and Error set, with whatever figures were
// gathered before the failure.
func Run(ctx context.Context, cfg Config) Result {
	res := Result{Impl: cfg.Impl, Items: cfg.Items}
	cfg, err := cfg.Defaults()
	if err != nil {
		res.Error = err.Error()
		return res
	}
	res.InFlight = cfg.InFlight
	res.PublishingMs = ms(cfg.PublishingInterval)
	res.SamplingMs = ms(cfg.SamplingInterval)
	res.ExpectedPerS = float64(cfg.Items) / max(cfg.SamplingInterval, cfg.UpdateInterval).Seconds()
	res.ServerPID = cfg.ServerPID

	ctx, cancel := context.WithTimeout(ctx, cfg.Deadline())
	defer cancel()
	r := &run{
		cfg:       cfg,
		hist:      measure.NewHistogram(ageBucket, ageLimit),
		send:      measure.NewHistogram(ageBucket, ageLimit),
		firstByte: measure.NewHistogram(ageBucket, ageLimit),
		covered:   make([]bool, cfg.Items),
		fatalCh:   make(chan struct{}),
	}
	if err := r.do(ctx, &res); err != nil {
		res.Error = err.Error()
		return res
	}
	res.OK = true
	return res
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// run is the state of one Run.
type run struct {
	cfg   Config
	ch    *uaclient.Channel
	sess  *uaclient.Session
	subID uint32

	fatalOnce sync.Once
	fatalErr  error
	fatalCh   chan struct{} // closed by fail

	mu        sync.Mutex // guards every field below
	acks      []*ua.SubscriptionAcknowledgement
	lastReply time.Time
	winStart  time.Time // zero until the window opens
	winEnd    time.Time
	hist      *measure.Histogram
	send      *measure.Histogram // receipt − PublishTime per notification message
	firstByte *measure.Histogram // first chunk − PublishTime per notification message
	covered   []bool
	nCovered  int
	seqs      []uint32 // sequence numbers of notification messages in the window
	notes     uint64
	noSource  uint64
	bad       uint64
	msgs      uint64
	keepalive uint64
	faults    uint64
	timeouts  uint64
	badAcks   uint64
	badAck    ua.StatusCode // first non-Good acknowledgement result
}

// fail records the first fatal error of the publish loop.
func (r *run) fail(err error) {
	r.fatalOnce.Do(func() {
		r.fatalErr = err
		close(r.fatalCh)
	})
}

func (r *run) do(ctx context.Context, res *Result) error {
	cfg := r.cfg
	if cfg.ServerPID > 0 {
		rss, err := measure.RSS(cfg.ServerPID)
		if err != nil {
			return fmt.Errorf("server pid %d: %w", cfg.ServerPID, err)
		}
		res.ServerRSSStartMB = mb(rss)
	}
	t0 := time.Now()
	if err := r.setup(ctx); err != nil {
		return err
	}
	defer r.cleanup()
	res.SetupS = time.Since(t0).Seconds()

	pubCtx, stopPublishing := context.WithCancel(ctx)
	var wg sync.WaitGroup
	defer func() {
		stopPublishing()
		wg.Wait()
	}()
	r.mu.Lock()
	r.lastReply = time.Now()
	r.mu.Unlock()
	for range cfg.InFlight {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r.publisher(pubCtx)
		}()
	}

	if err := r.wait(ctx, time.Now().Add(cfg.Warmup)); err != nil {
		return fmt.Errorf("warm-up: %w", err)
	}
	w, err := r.openWindow(ctx)
	if err != nil {
		return err
	}
	if cfg.OnWindow != nil {
		cfg.OnWindow()
	}
	werr := r.wait(ctx, w.end)
	end, cerr := r.closeWindow(ctx, w)
	stopPublishing()
	wg.Wait()
	r.fill(res, w, end)
	if werr != nil {
		return fmt.Errorf("measured window: %w", werr)
	}
	return cerr
}

func mb(b uint64) float64 { return float64(b) / (1 << 20) }

// setup dials, activates a session, creates the subscription and the
// monitored items.
func (r *run) setup(ctx context.Context) error {
	cfg := r.cfg
	ch, err := uaclient.Dial(ctx, cfg.URL, uaclient.Options{DialTimeout: cfg.CallTimeout})
	if err != nil {
		return err
	}
	r.ch = ch
	r.sess, err = uaclient.NewSession(ctx, ch, "subload", cfg.Deadline()+time.Minute, cfg.CallTimeout)
	if err != nil {
		ch.Close()
		return err
	}
	resp, err := r.sess.Call(ctx, &ua.CreateSubscriptionRequest{
		RequestedPublishingInterval: ms(cfg.PublishingInterval),
		RequestedLifetimeCount:      cfg.LifetimeCount,
		RequestedMaxKeepAliveCount:  cfg.KeepAliveCount,
		MaxNotificationsPerPublish:  cfg.MaxNotificationsPerPublish,
		PublishingEnabled:           true,
	}, cfg.CallTimeout)
	if err != nil {
		r.cleanup()
		return fmt.Errorf("CreateSubscription: %w", err)
	}
	r.subID = resp.(*ua.CreateSubscriptionResponse).SubscriptionID
	for from := 0; from < cfg.Items; from += cfg.Batch {
		if err := r.createItems(ctx, from, min(from+cfg.Batch, cfg.Items)); err != nil {
			r.cleanup()
			return err
		}
	}
	return nil
}

// createItems creates the monitored items of variables [from, to); the
// client handle of variable k is k.
func (r *run) createItems(ctx context.Context, from, to int) error {
	cfg := r.cfg
	items := make([]*ua.MonitoredItemCreateRequest, 0, to-from)
	for k := from; k < to; k++ {
		items = append(items, &ua.MonitoredItemCreateRequest{
			ItemToMonitor: &ua.ReadValueID{
				NodeID:       ua.NewNumericNodeID(cfg.Namespace, cfg.FirstID+uint32(k)),
				AttributeID:  ua.AttributeIDValue,
				DataEncoding: &ua.QualifiedName{},
			},
			MonitoringMode: ua.MonitoringModeReporting,
			RequestedParameters: &ua.MonitoringParameters{
				ClientHandle:     uint32(k),
				SamplingInterval: ms(cfg.SamplingInterval),
				Filter:           ua.NewExtensionObject(nil),
				QueueSize:        cfg.QueueSize,
				DiscardOldest:    true,
			},
		})
	}
	resp, err := r.sess.Call(ctx, &ua.CreateMonitoredItemsRequest{
		SubscriptionID:     r.subID,
		TimestampsToReturn: ua.TimestampsToReturnBoth,
		ItemsToCreate:      items,
	}, cfg.CallTimeout)
	if err != nil {
		return fmt.Errorf("CreateMonitoredItems [%d, %d): %w", from, to, err)
	}
	results := resp.(*ua.CreateMonitoredItemsResponse).Results
	if len(results) != len(items) {
		return fmt.Errorf("CreateMonitoredItems [%d, %d): %d results for %d items", from, to, len(results), len(items))
	}
	var bad int
	var first error
	for i, res := range results {
		if res == nil || res.StatusCode != ua.StatusOK {
			bad++
			if first == nil {
				st := ua.StatusBad
				if res != nil {
					st = res.StatusCode
				}
				first = fmt.Errorf("%s: %w", items[i].ItemToMonitor.NodeID, st)
			}
		}
	}
	if bad > 0 {
		return fmt.Errorf("CreateMonitoredItems [%d, %d): %d items failed, first %v", from, to, bad, first)
	}
	return nil
}

// cleanup closes the session (deleting its subscription) and the channel,
// waiting at most two seconds for the server.
func (r *run) cleanup() {
	if r.ch == nil {
		return
	}
	if r.sess != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		_ = r.sess.Close(ctx, 2*time.Second)
		cancel()
		r.sess = nil
	}
	r.ch.Close()
	r.ch = nil
}

// publisher keeps one Publish request outstanding until ctx is done.
func (r *run) publisher(ctx context.Context) {
	var p uaclient.Publish
	for ctx.Err() == nil {
		acks := r.takeAcks()
		reply, err := r.ch.Request(ctx, &ua.PublishRequest{SubscriptionAcknowledgements: acks}, r.sess.Auth(), r.cfg.PublishTimeout)
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			r.returnAcks(acks)
			if errors.Is(err, uaclient.ErrTimeout) {
				r.mu.Lock()
				r.timeouts++
				r.mu.Unlock()
				continue
			}
			r.fail(fmt.Errorf("Publish: %w", err))
			return
		}
		if err := r.record(reply, &p); err != nil {
			r.fail(err)
			return
		}
		if !p.Fault && p.ServiceResult == ua.StatusOK {
			continue
		}
		switch p.ServiceResult {
		case ua.StatusBadTooManyPublishRequests, ua.StatusBadTimeout:
			// The server holds enough requests or dropped an old one; ask
			// again shortly.
			select {
			case <-ctx.Done():
			case <-time.After(10 * time.Millisecond):
			}
		default:
			r.fail(fmt.Errorf("Publish answered %v", p.ServiceResult))
			return
		}
	}
}

func (r *run) takeAcks() []*ua.SubscriptionAcknowledgement {
	r.mu.Lock()
	defer r.mu.Unlock()
	a := r.acks
	r.acks = nil
	return a
}

func (r *run) returnAcks(a []*ua.SubscriptionAcknowledgement) {
	if len(a) == 0 {
		return
	}
	r.mu.Lock()
	r.acks = append(r.acks, a...)
	r.mu.Unlock()
}

// record decodes one Publish response and accounts for it.
func (r *run) record(reply uaclient.Reply, p *uaclient.Publish) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.lastReply = reply.At
	in := !r.winStart.IsZero() && !reply.At.Before(r.winStart) && reply.At.Before(r.winEnd)
	at := reply.At.UnixNano()
	err := uaclient.DecodePublish(reply.Body, p, func(it uaclient.Item) {
		if !in {
			return
		}
		r.notes++
		if it.Mask&ua.DataValueStatusCode != 0 && it.Status != ua.StatusOK {
			r.bad++
		}
		if it.Source == 0 {
			r.noSource++
		} else {
			r.hist.Add(time.Duration(at - it.Source))
		}
		if h := int(it.ClientHandle); h < len(r.covered) && !r.covered[h] {
			r.covered[h] = true
			r.nCovered++
		}
	})
	if err != nil {
		return fmt.Errorf("Publish response: %w", err)
	}
	if p.Fault || p.ServiceResult != ua.StatusOK {
		r.faults++
		return nil
	}
	if p.StatusChange {
		return fmt.Errorf("the server closed the subscription (StatusChangeNotification %v)", p.Status)
	}
	if p.SubscriptionID != r.subID {
		return fmt.Errorf("Publish response for subscription %d, want %d", p.SubscriptionID, r.subID)
	}
	for _, s := range p.AckResults {
		if s != ua.StatusOK && in {
			if r.badAcks == 0 {
				r.badAck = s
			}
			r.badAcks++
		}
	}
	if p.Keepalive() {
		if in {
			r.keepalive++
		}
		return nil
	}
	r.acks = append(r.acks, &ua.SubscriptionAcknowledgement{SubscriptionID: p.SubscriptionID, SequenceNumber: p.SequenceNumber})
	if in {
		r.msgs++
		r.seqs = append(r.seqs, p.SequenceNumber)
		if p.PublishTime != 0 {
			r.send.Add(time.Duration(at - p.PublishTime))
			r.firstByte.Add(time.Duration(reply.First.UnixNano() - p.PublishTime))
		}
	}
	return nil
}

// wait returns at until, or earlier with an error when the run deadline
// passes, the publish loop failed, or no Publish response came for
// StallTimeout.
func (r *run) wait(ctx context.Context, until time.Time) error {
	timer := time.NewTimer(time.Until(until))
	defer timer.Stop()
	check := time.NewTicker(100 * time.Millisecond)
	defer check.Stop()
	for {
		select {
		case <-timer.C:
			return nil
		case <-ctx.Done():
			return fmt.Errorf("run deadline passed: %w", ctx.Err())
		case <-r.fatalCh:
			return r.fatalErr
		case now := <-check.C:
			r.mu.Lock()
			quiet := now.Sub(r.lastReply)
			r.mu.Unlock()
			if quiet > r.cfg.StallTimeout {
				return fmt.Errorf("no Publish response for %v (server stalled or deadlocked)", quiet.Round(time.Millisecond))
			}
			if r.cfg.ServerPID > 0 {
				if _, err := os.Stat(fmt.Sprintf("/proc/%d", r.cfg.ServerPID)); err != nil {
					return fmt.Errorf("server process %d is gone", r.cfg.ServerPID)
				}
			}
		}
	}
}

// window holds what is read at the start of the measured window.
type window struct {
	start, end time.Time
	serverCPU  time.Duration
	clientCPU  time.Duration
	rounds     int64
	roundsOK   bool
	rss        *rssSampler
}

func (r *run) openWindow(ctx context.Context) (window, error) {
	var w window
	var err error
	if r.cfg.ServerPID > 0 {
		if w.serverCPU, err = measure.CPUTime(r.cfg.ServerPID); err != nil {
			return w, fmt.Errorf("server CPU at window start: %w", err)
		}
	}
	w.clientCPU, _ = measure.CPUTime(os.Getpid())
	w.start = time.Now()
	w.end = w.start.Add(r.cfg.Measure)
	r.mu.Lock()
	r.winStart, r.winEnd = w.start, w.end
	r.mu.Unlock()
	if r.cfg.ServerPID > 0 {
		w.rss = startRSS(r.cfg.ServerPID, r.cfg.RSSEvery)
	}
	if r.cfg.RoundsID != 0 {
		w.rounds, w.roundsOK = r.readRounds(ctx)
	}
	return w, nil
}

type windowEnd struct {
	wall                 time.Duration
	serverCPU, clientCPU time.Duration
	rounds               int64
	roundsOK             bool
	rssMax, rssMean      uint64
}

func (r *run) closeWindow(ctx context.Context, w window) (windowEnd, error) {
	var e windowEnd
	var err error
	now := time.Now()
	e.wall = now.Sub(w.start)
	if r.cfg.ServerPID > 0 {
		var cpu time.Duration
		cpu, err = measure.CPUTime(r.cfg.ServerPID)
		if err != nil {
			err = fmt.Errorf("server CPU at window end: %w", err)
		}
		e.serverCPU = cpu - w.serverCPU
		e.rssMax, e.rssMean = w.rss.stop()
	}
	cc, _ := measure.CPUTime(os.Getpid())
	e.clientCPU = cc - w.clientCPU
	if w.roundsOK {
		e.rounds, e.roundsOK = r.readRounds(ctx)
		e.rounds -= w.rounds
	}
	return e, err
}

// readRounds reads the server's update-round counter.
func (r *run) readRounds(ctx context.Context) (int64, bool) {
	resp, err := r.sess.Call(ctx, &ua.ReadRequest{
		TimestampsToReturn: ua.TimestampsToReturnNeither,
		NodesToRead: []*ua.ReadValueID{{
			NodeID:       ua.NewNumericNodeID(r.cfg.Namespace, r.cfg.RoundsID),
			AttributeID:  ua.AttributeIDValue,
			DataEncoding: &ua.QualifiedName{},
		}},
	}, r.cfg.CallTimeout)
	if err != nil {
		return 0, false
	}
	rr := resp.(*ua.ReadResponse)
	if len(rr.Results) != 1 || rr.Results[0] == nil || rr.Results[0].Value == nil {
		return 0, false
	}
	switch v := rr.Results[0].Value.Value().(type) {
	case int64:
		return v, true
	case uint64:
		return int64(v), true
	case int32:
		return int64(v), true
	case uint32:
		return int64(v), true
	}
	return 0, false
}

// fill computes the result's figures from the run's counters.
func (r *run) fill(res *Result, w window, e windowEnd) {
	r.mu.Lock()
	defer r.mu.Unlock()
	secs := e.wall.Seconds()
	res.WindowS = secs
	res.Notifications = r.notes
	if secs > 0 {
		res.NotificationsPerS = float64(r.notes) / secs
	}
	res.ItemsCovered = r.nCovered
	res.AgeP50Ms = ms(r.hist.Quantile(0.50))
	res.AgeP99Ms = ms(r.hist.Quantile(0.99))
	res.AgeMaxMs = ms(r.hist.Max())
	res.AgeMeanMs = ms(r.hist.Mean())
	res.NoSourceTimestamp = r.noSource
	res.NegativeAges = r.hist.Negative()
	res.BadValues = r.bad
	res.NotificationMsgs = r.msgs
	res.Keepalives = r.keepalive
	res.SequenceGaps = gaps(r.seqs)
	res.PublishFaults = r.faults
	res.PublishTimeouts = r.timeouts
	res.BadAckResults = r.badAcks
	if r.badAcks > 0 {
		res.BadAckStatus = r.badAck.Error()
	}
	res.SendP50Ms = ms(r.send.Quantile(0.50))
	res.SendP99Ms = ms(r.send.Quantile(0.99))
	res.FirstChunkP50Ms = ms(r.firstByte.Quantile(0.50))
	res.FirstChunkP99Ms = ms(r.firstByte.Quantile(0.99))
	if e.roundsOK && secs > 0 {
		res.ServerRoundsPerS = float64(e.rounds) / secs
	}
	if r.cfg.ServerPID > 0 {
		res.ServerCPUPct = measure.CPUPercent(e.serverCPU, e.wall)
		if e.serverCPU > 0 {
			res.NotificationsPerCPU = float64(r.notes) / e.serverCPU.Seconds()
		}
		res.ServerRSSMaxMB = mb(e.rssMax)
		res.ServerRSSMeanMB = mb(e.rssMean)
	}
	res.ClientCPUPct = measure.CPUPercent(e.clientCPU, e.wall)
	res.Warnings = r.warnings(res)
}

func (r *run) warnings(res *Result) []string {
	var ws []string
	if res.ItemsCovered < res.Items {
		ws = append(ws, fmt.Sprintf("only %d of %d items were notified in the window", res.ItemsCovered, res.Items))
	}
	if want := time.Second.Seconds() / r.cfg.UpdateInterval.Seconds(); res.ServerRoundsPerS > 0 && res.ServerRoundsPerS < 0.95*want {
		ws = append(ws, fmt.Sprintf("the server's update loop managed %.1f rounds/s of %.0f", res.ServerRoundsPerS, want))
	}
	if res.SequenceGaps > 0 {
		ws = append(ws, fmt.Sprintf("%d notification messages missing (sequence gaps)", res.SequenceGaps))
	}
	if res.PublishTimeouts > 0 {
		ws = append(ws, fmt.Sprintf("%d Publish requests timed out", res.PublishTimeouts))
	}
	if res.BadAckResults > 0 {
		ws = append(ws, fmt.Sprintf("%d acknowledgements answered non-Good (first %s)", res.BadAckResults, res.BadAckStatus))
	}
	if res.NoSourceTimestamp > 0 {
		ws = append(ws, fmt.Sprintf("%d notifications without SourceTimestamp", res.NoSourceTimestamp))
	}
	if res.NegativeAges > 0 {
		ws = append(ws, fmt.Sprintf("%d SourceTimestamps later than their receipt", res.NegativeAges))
	}
	if res.ClientCPUPct > 80 {
		ws = append(ws, fmt.Sprintf("client used %.0f%% CPU; it may limit the figures", res.ClientCPUPct))
	}
	return ws
}

// gaps counts sequence numbers missing between the smallest and largest of
// seqs (a notification message the client never received).
func gaps(seqs []uint32) uint64 {
	if len(seqs) < 2 {
		return 0
	}
	s := slices.Clone(seqs)
	slices.Sort(s)
	s = slices.Compact(s)
	span := uint64(s[len(s)-1]-s[0]) + 1
	return span - uint64(len(s))
}

// rssSampler samples a process's RSS periodically.
type rssSampler struct {
	done chan struct{}
	out  chan [2]uint64
}

func startRSS(pid int, every time.Duration) *rssSampler {
	s := &rssSampler{done: make(chan struct{}), out: make(chan [2]uint64, 1)}
	go func() {
		var maxRSS, sum, n uint64
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			if v, err := measure.RSS(pid); err == nil {
				maxRSS = max(maxRSS, v)
				sum += v
				n++
			}
			select {
			case <-s.done:
				if n > 0 {
					sum /= n
				}
				s.out <- [2]uint64{maxRSS, sum}
				return
			case <-t.C:
			}
		}
	}()
	return s
}

// stop ends sampling and returns the largest and the mean sample.
func (s *rssSampler) stop() (maxRSS, mean uint64) {
	close(s.done)
	v := <-s.out
	return v[0], v[1]
}
