package main

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gopcua/opcua/ua"

	"github.com/otopcua/otopcua/bench/internal/fieldrig"
	"github.com/otopcua/otopcua/bench/internal/measure"
	"github.com/otopcua/otopcua/opcua/uaclient"
)

// Value-age histogram: 0.1 ms buckets up to 10 s.
const (
	ageWidth = 100 * time.Microsecond
	ageLimit = 10 * time.Second
)

// load is the client side: Sessions sessions on the Primary, each on its
// own secure channel with one subscription of Items monitored items,
// Inflight Publish requests outstanding per session, every sequence
// number acknowledged in a later request. It records the value age of
// every data-change notification read inside the window: the time its
// response's last chunk was read − its SourceTimestamp (the serving
// node's read of the device; one machine, one clock).
type load struct {
	c        Config
	sessions []*loadSession

	measuring atomic.Bool
	mu        sync.Mutex
	age       *measure.Histogram // mu must be held.
	noSource  uint64             // in-window notifications without a SourceTimestamp; mu must be held.

	messages, keepalives, badAcks atomic.Uint64
	faults                        measure.Faults // failed Publish requests
}

// loadSession is one client session.
type loadSession struct {
	ch    *uaclient.Channel
	s     *uaclient.Session
	mu    sync.Mutex
	acks  []*ua.SubscriptionAcknowledgement // to send; mu must be held.
	subID uint32
}

// openLoad opens the sessions on endpoint with c.SetupWorkers at a time;
// session s monitors tags s×Items … s×Items+Items−1 (modulo the tags), so
// every tag has Sessions×Items/Tags items.
func openLoad(ctx context.Context, endpoint string, c Config) (*load, error) {
	ld := &load{c: c, sessions: make([]*loadSession, c.Sessions), age: measure.NewHistogram(ageWidth, ageLimit)}
	var ns uint16
	{
		ch, err := uaclient.Dial(ctx, endpoint, uaclient.Options{})
		if err != nil {
			return nil, err
		}
		s, err := uaclient.NewSession(ctx, ch, "mbench namespace", time.Minute, 10*time.Second)
		if err == nil {
			ns, err = fieldrig.Namespace(s, clusterID)
			_ = s.Close(ctx, 5*time.Second)
		}
		_ = ch.Close()
		if err != nil {
			return nil, err
		}
	}
	nodes := fieldrig.NodeIDs(ns, c.Layout())
	jobs := make(chan int)
	errs := make(chan error, c.SetupWorkers)
	var wg sync.WaitGroup
	for range c.SetupWorkers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range jobs {
				ls, err := ld.open(ctx, endpoint, i, nodes)
				if err != nil {
					errs <- fmt.Errorf("session %d: %w", i, err)
					for range jobs { // drain
					}
					return
				}
				ld.sessions[i] = ls
			}
		}()
	}
	for i := range c.Sessions {
		jobs <- i
	}
	close(jobs)
	wg.Wait()
	close(errs)
	if err := <-errs; err != nil {
		ld.close()
		return nil, err
	}
	return ld, nil
}

// open creates session i: channel, session, subscription, items.
func (ld *load) open(ctx context.Context, endpoint string, i int, nodes []*ua.NodeID) (*loadSession, error) {
	c := ld.c
	ch, err := uaclient.Dial(ctx, endpoint, uaclient.Options{})
	if err != nil {
		return nil, err
	}
	s, err := uaclient.NewSession(ctx, ch, fmt.Sprintf("mbench %d", i), 10*time.Minute, 30*time.Second)
	if err != nil {
		_ = ch.Close()
		return nil, err
	}
	ls := &loadSession{ch: ch, s: s}
	resp, err := s.Call(ctx, &ua.CreateSubscriptionRequest{RequestedPublishingInterval: msOf(c.Publishing),
		RequestedLifetimeCount: 600, RequestedMaxKeepAliveCount: 20, PublishingEnabled: true}, 30*time.Second)
	if err != nil {
		_ = ch.Close()
		return nil, fmt.Errorf("CreateSubscription: %w", err)
	}
	ls.subID = resp.(*ua.CreateSubscriptionResponse).SubscriptionID
	first := i * c.Items
	for from := 0; from < c.Items; from += fieldrig.ReadBatch {
		req := &ua.CreateMonitoredItemsRequest{SubscriptionID: ls.subID, TimestampsToReturn: ua.TimestampsToReturnBoth}
		for h := from; h < min(from+fieldrig.ReadBatch, c.Items); h++ {
			req.ItemsToCreate = append(req.ItemsToCreate, &ua.MonitoredItemCreateRequest{
				ItemToMonitor:  &ua.ReadValueID{NodeID: nodes[(first+h)%len(nodes)], AttributeID: ua.AttributeIDValue, DataEncoding: &ua.QualifiedName{}},
				MonitoringMode: ua.MonitoringModeReporting,
				RequestedParameters: &ua.MonitoringParameters{ClientHandle: uint32(h), SamplingInterval: msOf(c.Sampling),
					QueueSize: uint32(c.QueueSize), DiscardOldest: true, Filter: ua.NewExtensionObject(nil)},
			})
		}
		resp, err := s.Call(ctx, req, 30*time.Second)
		if err != nil {
			_ = ch.Close()
			return nil, fmt.Errorf("CreateMonitoredItems: %w", err)
		}
		for k, r := range resp.(*ua.CreateMonitoredItemsResponse).Results {
			if r.StatusCode != ua.StatusOK {
				_ = ch.Close()
				return nil, fmt.Errorf("monitored item %d: %v", from+k, r.StatusCode)
			}
		}
	}
	return ls, nil
}

// run keeps Inflight Publish requests outstanding on every session until
// ctx ends.
func (ld *load) run(ctx context.Context) {
	var wg sync.WaitGroup
	for _, ls := range ld.sessions {
		for range ld.c.Inflight {
			wg.Add(1)
			go func() { defer wg.Done(); ld.publishLoop(ctx, ls) }()
		}
	}
	wg.Wait()
}

func (ld *load) publishLoop(ctx context.Context, ls *loadSession) {
	var ages []time.Duration
	for ctx.Err() == nil {
		ls.mu.Lock()
		acks := ls.acks
		ls.acks = nil
		ls.mu.Unlock()
		rep, err := ls.ch.Request(ctx, &ua.PublishRequest{SubscriptionAcknowledgements: acks}, ls.s.Auth(), 10*time.Second)
		if err != nil {
			if ctx.Err() != nil || errors.Is(err, uaclient.ErrClosed) {
				return
			}
			ld.faults.Add(err.Error())
			continue
		}
		ages = ages[:0]
		var p uaclient.Publish
		noSource := uint64(0)
		err = uaclient.DecodePublish(rep.Body, &p, func(it uaclient.Item) {
			if it.Status != ua.StatusOK {
				return
			}
			if it.Source == 0 {
				noSource++
				return
			}
			ages = append(ages, rep.At.Sub(time.Unix(0, it.Source)))
		})
		switch {
		case err != nil:
			ld.faults.Add(err.Error())
		case p.Fault || p.ServiceResult != ua.StatusOK:
			ld.faults.Add(fmt.Sprintf("Publish: %v", p.ServiceResult))
		}
		if err != nil || p.Fault || p.ServiceResult != ua.StatusOK {
			select { // a fault is answered at once; do not spin on it
			case <-ctx.Done():
			case <-time.After(10 * time.Millisecond):
			}
			continue
		}
		for _, st := range p.AckResults {
			if st != ua.StatusOK {
				ld.badAcks.Add(1)
			}
		}
		if p.Keepalive() {
			ld.keepalives.Add(1)
			continue
		}
		ls.mu.Lock()
		ls.acks = append(ls.acks, &ua.SubscriptionAcknowledgement{SubscriptionID: p.SubscriptionID, SequenceNumber: p.SequenceNumber})
		ls.mu.Unlock()
		if !ld.measuring.Load() {
			continue
		}
		ld.messages.Add(1)
		ld.mu.Lock()
		for _, a := range ages {
			ld.age.Add(a)
		}
		ld.noSource += noSource
		ld.mu.Unlock()
	}
}

// close closes every channel (the sessions stay until the processes end).
func (ld *load) close() {
	for _, ls := range ld.sessions {
		if ls != nil {
			_ = ls.ch.Close()
		}
	}
}

// ClientFigures are what the client saw in the window.
type ClientFigures struct {
	// Notifications are the Good data-change notifications read in the
	// window; PerS their rate.
	Notifications uint64  `json:"notifications"`
	PerS          float64 `json:"notifications_per_s"`
	// Value age (receipt − SourceTimestamp).
	AgeP50Ms float64 `json:"age_p50_ms"`
	AgeP99Ms float64 `json:"age_p99_ms"`
	AgeMaxMs float64 `json:"age_max_ms"`
	// Messages and Keepalives: Publish responses with and without
	// notifications (keep-alives over the whole run).
	Messages   uint64 `json:"messages"`
	Keepalives uint64 `json:"keepalives"`
	// NoSource counts notifications without a SourceTimestamp.
	NoSource uint64 `json:"no_source_timestamp"`
	// Faults: Publish requests that failed; BadAcks: acknowledgements the
	// server answered non-Good.
	Faults     uint64 `json:"publish_faults"`
	FirstFault string `json:"first_fault,omitempty"`
	BadAcks    uint64 `json:"bad_acks"`
}

// figures are the client's figures over a window of wall length.
func (ld *load) figures(wall time.Duration) ClientFigures {
	ld.mu.Lock()
	defer ld.mu.Unlock()
	n := ld.age.Count()
	return ClientFigures{Notifications: n, PerS: float64(n) / wall.Seconds(),
		AgeP50Ms: msOf(min(ld.age.Quantile(0.5), ld.age.Max())), AgeP99Ms: msOf(min(ld.age.Quantile(0.99), ld.age.Max())),
		AgeMaxMs: msOf(ld.age.Max()), Messages: ld.messages.Load(), Keepalives: ld.keepalives.Load(), NoSource: ld.noSource,
		Faults: ld.faults.Count(), FirstFault: ld.faults.First(), BadAcks: ld.badAcks.Load()}
}

func msOf(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
