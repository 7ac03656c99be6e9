package main

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/gopcua/opcua/id"
	"github.com/gopcua/opcua/ua"

	"github.com/otopcua/otopcua/bench/internal/measure"
	"github.com/otopcua/otopcua/opcua/uaclient"
)

// The well-behaved client's settings.
const (
	goodPublishing   = 200 * time.Millisecond // publishing interval
	goodInFlight     = 3                      // Publish requests kept outstanding
	goodReadEvery    = 100 * time.Millisecond
	goodCallTimeout  = 5 * time.Second
	goodPubTimeout   = 10 * time.Second
	goodMaxErrors    = 20 // error texts kept (all are counted)
	gapBucket        = time.Millisecond
	latencyBucket    = 100 * time.Microsecond
	histogramLimit   = 60 * time.Second
	goodClientHandle = 1 // i=2258 CurrentTime; i=2267 ServiceLevel is 2
)

// Good is the well-behaved client: one session, one subscription
// (publishing interval 200 ms, MaxKeepAliveCount 1, so a Publish response
// — data or keep-alive — is due every 200 ms) on Server.ServerStatus.
// CurrentTime and Server.ServiceLevel, goodInFlight Publish requests
// outstanding, every gap between Publish responses recorded; and a Read
// of ServiceLevel every 100 ms, its latency recorded. Any failed Read or
// Publish is an error.
//
// Its methods are safe for concurrent use.
type Good struct {
	ch    *uaclient.Channel
	sess  *uaclient.Session
	subID uint32
	start time.Time
	phase func() Phase

	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu         sync.Mutex
	lastPub    time.Time                         // receipt of the newest Publish response; mu must be held.
	gaps       *measure.Histogram                // mu must be held.
	phaseMax   map[Phase]time.Duration           // largest gap ending in each phase; mu must be held.
	worstAt    time.Duration                     // when the largest gap ended, since start; mu must be held.
	reads      *measure.Histogram                // Read latency; mu must be held.
	acks       []*ua.SubscriptionAcknowledgement // to send; mu must be held.
	seqs       map[uint32]bool                   // sequence numbers of the data messages received; mu must be held.
	lastServer int64                             // newest PublishTime (Unix ns) seen; mu must be held.
	serverGap  time.Duration                     // largest gap between consecutive PublishTimes; mu must be held.
	selfStall  time.Duration                     // largest lateness of this client's own 10 ms ticker; mu must be held.
	pubs       uint64                            // Publish responses; mu must be held.
	keepalives uint64                            // mu must be held.
	errCount   uint64                            // mu must be held.
	errs       []string                          // the first goodMaxErrors; mu must be held.
}

// StartGood connects to endpoint, subscribes and starts the publish and
// read loops.
func StartGood(ctx context.Context, endpoint string, start time.Time, phase func() Phase) (*Good, error) {
	ch, err := uaclient.Dial(ctx, endpoint, uaclient.Options{})
	if err != nil {
		return nil, err
	}
	g := &Good{ch: ch, start: start, phase: phase,
		gaps: measure.NewHistogram(gapBucket, histogramLimit), reads: measure.NewHistogram(latencyBucket, histogramLimit),
		phaseMax: map[Phase]time.Duration{}, seqs: map[uint32]bool{}}
	if err := g.subscribe(ctx); err != nil {
		ch.Close()
		return nil, err
	}
	loop, cancel := context.WithCancel(context.Background())
	g.cancel = cancel
	for range goodInFlight {
		g.wg.Go(func() { g.publishLoop(loop) })
	}
	g.wg.Go(func() { g.readLoop(loop) })
	g.wg.Go(func() { g.watchSelf(loop) })
	return g, nil
}

func (g *Good) subscribe(ctx context.Context) error {
	var err error
	g.sess, err = uaclient.NewSession(ctx, g.ch, "soak well-behaved", time.Minute, goodCallTimeout)
	if err != nil {
		return err
	}
	resp, err := g.sess.Call(ctx, &ua.CreateSubscriptionRequest{
		RequestedPublishingInterval: ms(goodPublishing),
		RequestedLifetimeCount:      300,
		RequestedMaxKeepAliveCount:  1,
		PublishingEnabled:           true,
	}, goodCallTimeout)
	if err != nil {
		return fmt.Errorf("CreateSubscription: %w", err)
	}
	cs := resp.(*ua.CreateSubscriptionResponse)
	if cs.RevisedPublishingInterval != ms(goodPublishing) || cs.RevisedMaxKeepAliveCount != 1 {
		return fmt.Errorf("CreateSubscription revised to %v ms, keep-alive count %d: want %v ms and 1",
			cs.RevisedPublishingInterval, cs.RevisedMaxKeepAliveCount, ms(goodPublishing))
	}
	g.subID = cs.SubscriptionID
	var items []*ua.MonitoredItemCreateRequest
	for k, n := range []uint32{id.Server_ServerStatus_CurrentTime, id.Server_ServiceLevel} {
		items = append(items, &ua.MonitoredItemCreateRequest{
			ItemToMonitor:  &ua.ReadValueID{NodeID: ua.NewNumericNodeID(0, n), AttributeID: ua.AttributeIDValue, DataEncoding: &ua.QualifiedName{}},
			MonitoringMode: ua.MonitoringModeReporting,
			RequestedParameters: &ua.MonitoringParameters{ClientHandle: uint32(goodClientHandle + k), SamplingInterval: 100,
				Filter: ua.NewExtensionObject(nil), QueueSize: 1, DiscardOldest: true},
		})
	}
	resp, err = g.sess.Call(ctx, &ua.CreateMonitoredItemsRequest{SubscriptionID: g.subID,
		TimestampsToReturn: ua.TimestampsToReturnBoth, ItemsToCreate: items}, goodCallTimeout)
	if err != nil {
		return fmt.Errorf("CreateMonitoredItems: %w", err)
	}
	for k, r := range resp.(*ua.CreateMonitoredItemsResponse).Results {
		if r.StatusCode != ua.StatusOK {
			return fmt.Errorf("CreateMonitoredItems: item %d: %w", k, r.StatusCode)
		}
	}
	return nil
}

// publishLoop keeps one Publish request outstanding until ctx ends.
func (g *Good) publishLoop(ctx context.Context) {
	var p uaclient.Publish
	for ctx.Err() == nil {
		acks := g.takeAcks()
		reply, err := g.ch.Request(ctx, &ua.PublishRequest{SubscriptionAcknowledgements: acks}, g.sess.Auth(), goodPubTimeout)
		if ctx.Err() != nil {
			return
		}
		if err != nil {
			g.fail("Publish: %v", err)
			if errors.Is(err, uaclient.ErrClosed) {
				return
			}
			pause(ctx, goodPublishing) // do not spin on a failing server
			continue
		}
		g.record(reply, &p)
	}
}

// record accounts for one Publish response.
func (g *Good) record(reply uaclient.Reply, p *uaclient.Publish) {
	err := uaclient.DecodePublish(reply.Body, p, func(uaclient.Item) {})
	g.mu.Lock()
	defer g.mu.Unlock()
	g.pubs++
	if !g.lastPub.IsZero() && reply.At.After(g.lastPub) {
		g.addGapLocked(reply.At.Sub(g.lastPub), reply.At)
	}
	if reply.At.After(g.lastPub) {
		g.lastPub = reply.At
	}
	switch {
	case err != nil:
		g.failLocked("Publish response: %v", err)
	case p.Fault || p.ServiceResult != ua.StatusOK:
		g.failLocked("Publish answered %s", statusName(p.ServiceResult))
	case p.StatusChange:
		g.failLocked("subscription status change %s", statusName(p.Status))
	case p.Keepalive():
		g.keepalives++
	default:
		// Several Publish requests are outstanding, so responses are
		// recorded in the order their goroutines run, not always in the
		// order they arrived: losses are counted at Stop, over the whole
		// range of sequence numbers.
		if g.seqs[p.SequenceNumber] {
			g.failLocked("notification message %d received twice", p.SequenceNumber)
		}
		g.seqs[p.SequenceNumber] = true
		g.acks = append(g.acks, &ua.SubscriptionAcknowledgement{SubscriptionID: p.SubscriptionID, SequenceNumber: p.SequenceNumber})
	}
	if p.PublishTime > g.lastServer {
		if g.lastServer != 0 {
			g.serverGap = max(g.serverGap, time.Duration(p.PublishTime-g.lastServer))
		}
		g.lastServer = p.PublishTime
	}
	for _, s := range p.AckResults {
		if s != ua.StatusOK {
			g.failLocked("acknowledgement answered %s", statusName(s))
		}
	}
}

// addGapLocked records a gap ending at end. g.mu must be held.
func (g *Good) addGapLocked(gap time.Duration, end time.Time) {
	g.gaps.Add(gap)
	ph := g.phase()
	if gap > g.phaseMax[ph] {
		g.phaseMax[ph] = gap
	}
	if gap >= g.gaps.Max() {
		g.worstAt = end.Sub(g.start)
	}
}

func (g *Good) takeAcks() []*ua.SubscriptionAcknowledgement {
	g.mu.Lock()
	defer g.mu.Unlock()
	a := g.acks
	g.acks = nil
	return a
}

// readLoop reads ServiceLevel every goodReadEvery until ctx ends.
func (g *Good) readLoop(ctx context.Context) {
	t := time.NewTicker(goodReadEvery)
	defer t.Stop()
	req := func() *ua.ReadRequest {
		return &ua.ReadRequest{TimestampsToReturn: ua.TimestampsToReturnBoth, NodesToRead: []*ua.ReadValueID{
			{NodeID: ua.NewNumericNodeID(0, id.Server_ServiceLevel), AttributeID: ua.AttributeIDValue, DataEncoding: &ua.QualifiedName{}}}}
	}
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		start := time.Now()
		resp, err := g.sess.Call(ctx, req(), goodCallTimeout)
		took := time.Since(start)
		if ctx.Err() != nil {
			return
		}
		g.mu.Lock()
		g.reads.Add(took)
		g.mu.Unlock()
		switch {
		case err != nil:
			g.fail("Read: %v", err)
		case len(resp.(*ua.ReadResponse).Results) != 1:
			g.fail("Read: %d results for one node", len(resp.(*ua.ReadResponse).Results))
		case resp.(*ua.ReadResponse).Results[0].Status != ua.StatusOK:
			g.fail("Read: ServiceLevel answered %s", statusName(resp.(*ua.ReadResponse).Results[0].Status))
		}
	}
}

// watchSelf measures how late this client's own goroutines run: a 10 ms
// ticker whose tick comes much later means the client, not the server,
// was held up (a busy machine), which a Publish gap alone cannot tell.
func (g *Good) watchSelf(ctx context.Context) {
	const every = 10 * time.Millisecond
	t := time.NewTicker(every)
	defer t.Stop()
	last := time.Now()
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-t.C:
			if late := time.Since(last) - every; late > 0 {
				g.mu.Lock()
				g.selfStall = max(g.selfStall, late)
				g.mu.Unlock()
			}
			last = now
		}
	}
}

// lostLocked counts the sequence numbers missing between the first and
// the newest data message received. g.mu must be held.
func (g *Good) lostLocked() int {
	if len(g.seqs) == 0 {
		return 0
	}
	lo, hi := ^uint32(0), uint32(0)
	for s := range g.seqs {
		lo, hi = min(lo, s), max(hi, s)
	}
	return int(hi-lo+1) - len(g.seqs)
}

// pause waits d or until ctx ends.
func pause(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}

func (g *Good) fail(format string, args ...any) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.failLocked(format, args...)
}

// failLocked records an error. g.mu must be held.
func (g *Good) failLocked(format string, args ...any) {
	g.errCount++
	if len(g.errs) < goodMaxErrors {
		g.errs = append(g.errs, fmt.Sprintf("%.1fs: ", time.Since(g.start).Seconds())+fmt.Sprintf(format, args...))
	}
}

// GoodFigures are what the well-behaved client saw.
type GoodFigures struct {
	Publishes     uint64                  `json:"publish_responses"`
	Keepalives    uint64                  `json:"keepalives"`
	GapMax        time.Duration           `json:"gap_max_ns"`
	GapP99        time.Duration           `json:"gap_p99_ns"`
	GapMaxAt      time.Duration           `json:"gap_max_at_ns"` // when the largest gap ended, since the start
	GapMaxByPhase map[Phase]time.Duration `json:"gap_max_by_phase_ns"`
	Reads         uint64                  `json:"reads"`
	ReadP50       time.Duration           `json:"read_p50_ns"`
	ReadP99       time.Duration           `json:"read_p99_ns"`
	ReadMax       time.Duration           `json:"read_max_ns"`
	Errors        uint64                  `json:"errors"`
	ErrorTexts    []string                `json:"error_texts,omitempty"`
	// ServerGapMax is the largest gap between the PublishTimes the server
	// stamped on consecutive responses: a stall of the server shows here,
	// one of the client only in GapMax.
	ServerGapMax time.Duration `json:"server_gap_max_ns"`
	// SelfStallMax is how late this client's own 10 ms ticker ran at worst.
	SelfStallMax time.Duration `json:"client_self_stall_max_ns"`
	// DataMessages and Lost count the data messages received and the
	// sequence numbers missing among them.
	DataMessages int `json:"data_messages"`
	Lost         int `json:"lost"`
}

// Stop ends the loops, counts the time since the last Publish response as
// a gap (a stall still going on at the end counts), closes the session
// and returns the figures.
func (g *Good) Stop() GoodFigures {
	now := time.Now()
	g.mu.Lock()
	if !g.lastPub.IsZero() {
		g.addGapLocked(now.Sub(g.lastPub), now)
	}
	g.mu.Unlock()
	g.cancel()
	g.wg.Wait()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	_ = g.sess.Close(ctx, 2*time.Second)
	cancel()
	g.ch.Close()

	g.mu.Lock()
	defer g.mu.Unlock()
	f := GoodFigures{
		Publishes: g.pubs, Keepalives: g.keepalives,
		GapMax: g.gaps.Max(), GapP99: g.gaps.Quantile(0.99), GapMaxAt: g.worstAt, GapMaxByPhase: map[Phase]time.Duration{},
		Reads: g.reads.Count(), ReadP50: g.reads.Quantile(0.5), ReadP99: g.reads.Quantile(0.99), ReadMax: g.reads.Max(),
		Errors: g.errCount, ErrorTexts: append([]string(nil), g.errs...),
		ServerGapMax: g.serverGap, SelfStallMax: g.selfStall, DataMessages: len(g.seqs), Lost: g.lostLocked(),
	}
	if f.Lost > 0 {
		f.Errors++
		f.ErrorTexts = append(f.ErrorTexts, fmt.Sprintf("%d of %d notification messages lost", f.Lost, f.Lost+f.DataMessages))
	}
	for ph, d := range g.phaseMax {
		f.GapMaxByPhase[ph] = d
	}
	if g.pubs == 0 {
		f.Errors++
		f.ErrorTexts = append(f.ErrorTexts, "no Publish response at all")
	}
	return f
}
