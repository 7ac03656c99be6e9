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
	"github.com/otopcua/otopcua/opcua/uawire"
)

// SubParams describe the benchmark's subscription.
type SubParams struct {
	Publishing, Sampling time.Duration
	// Inflight is the number of Publish requests kept outstanding.
	Inflight int
}

// subscriber is one subscription monitoring every tag (client handle =
// tag handle), with Inflight goroutines each keeping one Publish request
// outstanding and acknowledging every sequence number in a later request.
// Every data-change notification goes to the Tracker with the time its
// response was read off the socket.
type subscriber struct {
	sess  *session
	subID uint32
	k     *Tracker

	mu   sync.Mutex
	acks []*ua.SubscriptionAcknowledgement // to send; mu must be held.

	messages, keepalives atomic.Uint64
	faults               measure.Faults // failed Publish requests
}

// subscribe creates the subscription and its monitored items (queue size
// 1, discard oldest, timestamps Both) in requests of fieldrig.ReadBatch
// items.
func subscribe(sess *session, nodes []*ua.NodeID, p SubParams, k *Tracker) (*subscriber, error) {
	ms := float64(p.Publishing) / float64(time.Millisecond)
	resp, err := sess.call(&ua.CreateSubscriptionRequest{RequestedPublishingInterval: ms,
		RequestedLifetimeCount: 600, RequestedMaxKeepAliveCount: 20, PublishingEnabled: true})
	if err != nil {
		return nil, fmt.Errorf("CreateSubscription: %w", err)
	}
	sub := &subscriber{sess: sess, subID: resp.(*ua.CreateSubscriptionResponse).SubscriptionID, k: k}
	sampling := float64(p.Sampling) / float64(time.Millisecond)
	for from := 0; from < len(nodes); from += fieldrig.ReadBatch {
		req := &ua.CreateMonitoredItemsRequest{SubscriptionID: sub.subID, TimestampsToReturn: ua.TimestampsToReturnBoth}
		for h := from; h < min(from+fieldrig.ReadBatch, len(nodes)); h++ {
			req.ItemsToCreate = append(req.ItemsToCreate, &ua.MonitoredItemCreateRequest{
				ItemToMonitor:  &ua.ReadValueID{NodeID: nodes[h], AttributeID: ua.AttributeIDValue, DataEncoding: &ua.QualifiedName{}},
				MonitoringMode: ua.MonitoringModeReporting,
				RequestedParameters: &ua.MonitoringParameters{ClientHandle: uint32(h), SamplingInterval: sampling,
					QueueSize: 1, DiscardOldest: true, Filter: ua.NewExtensionObject(nil)},
			})
		}
		resp, err := sess.call(req)
		if err != nil {
			return nil, fmt.Errorf("CreateMonitoredItems: %w", err)
		}
		for i, r := range resp.(*ua.CreateMonitoredItemsResponse).Results {
			if r.StatusCode != ua.StatusOK {
				return nil, fmt.Errorf("monitored item of %s: %v", nodes[from+i], r.StatusCode)
			}
		}
	}
	return sub, nil
}

// run keeps Inflight Publish requests outstanding until ctx ends.
func (s *subscriber) run(ctx context.Context, inflight int) {
	var wg sync.WaitGroup
	for range inflight {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s.publishLoop(ctx)
		}()
	}
	wg.Wait()
}

func (s *subscriber) publishLoop(ctx context.Context) {
	for ctx.Err() == nil {
		s.mu.Lock()
		acks := s.acks
		s.acks = nil
		s.mu.Unlock()
		rep, err := s.sess.ch.Request(ctx, &ua.PublishRequest{SubscriptionAcknowledgements: acks}, s.sess.s.Auth(), 10*time.Second)
		if err != nil {
			if ctx.Err() != nil || errors.Is(err, uaclient.ErrClosed) {
				return
			}
			s.faults.Add(err.Error())
			continue
		}
		if err := s.handle(rep); err != nil {
			s.faults.Add(err.Error())
			// A fault is answered at once; do not spin on it.
			select {
			case <-ctx.Done():
			case <-time.After(10 * time.Millisecond):
			}
		}
	}
}

// handle decodes one Publish response and hands its notifications over.
func (s *subscriber) handle(rep uaclient.Reply) error {
	if code := uawire.CheckService(rep.Body); code != ua.StatusOK {
		return fmt.Errorf("Publish response refused: %v", code)
	}
	_, svc, err := ua.DecodeService(rep.Body)
	if err != nil {
		return fmt.Errorf("decode Publish response: %w", err)
	}
	pr, ok := svc.(*ua.PublishResponse)
	if !ok {
		return fmt.Errorf("Publish answered with %T", svc)
	}
	if st := pr.ResponseHeader.ServiceResult; st != ua.StatusOK {
		return fmt.Errorf("Publish: %v", st)
	}
	nm := pr.NotificationMessage
	if nm == nil || len(nm.NotificationData) == 0 {
		s.keepalives.Add(1)
		return nil
	}
	s.messages.Add(1)
	s.mu.Lock()
	s.acks = append(s.acks, &ua.SubscriptionAcknowledgement{SubscriptionID: pr.SubscriptionID, SequenceNumber: nm.SequenceNumber})
	s.mu.Unlock()
	for _, eo := range nm.NotificationData {
		dcn, ok := eo.Value.(*ua.DataChangeNotification)
		if !ok {
			continue
		}
		for _, it := range dcn.MonitoredItems {
			if it.Value == nil {
				continue
			}
			s.k.Notify(int(it.ClientHandle), it.Value.Value, it.Value.Status, it.Value.SourceTimestamp, rep.At)
		}
	}
	for _, st := range pr.Results {
		if st != ua.StatusOK {
			return fmt.Errorf("acknowledgement answered %v", st)
		}
	}
	return nil
}
