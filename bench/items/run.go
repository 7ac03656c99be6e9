package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"runtime"
	"time"

	"github.com/gopcua/opcua/id"
	"github.com/gopcua/opcua/ua"

	"github.com/otopcua/otopcua/opcua"
	"github.com/otopcua/otopcua/opcua/limits"
	"github.com/otopcua/otopcua/opcua/uaclient"
)

// Params are the settings every case of a run shares.
type Params struct {
	// Batch is the number of items per CreateMonitoredItems request.
	Batch int
	// Sampling is the requested sampling interval of every item.
	Sampling time.Duration
	// Timeout bounds the whole case: setup, creation and deletion.
	Timeout time.Duration
}

// Result is what one case measured. Durations are in seconds, sizes in
// bytes or MiB as named.
type Result struct {
	Bench      string  `json:"bench"` // always "items"
	Case       string  `json:"case"`
	Layout     Layout  `json:"layout"`
	Items      int     `json:"items"`
	Batch      int     `json:"batch"`
	SamplingMs float64 `json:"sampling_ms"`
	TimeoutS   float64 `json:"timeout_s"`

	SetupS float64 `json:"setup_s"` // variables, server start, session, subscription

	Created       int     `json:"created"` // items answered Good
	Refused       int     `json:"refused"` // items answered non-Good
	FirstRefusal  string  `json:"first_refusal,omitempty"`
	CreateS       float64 `json:"create_s"`       // all CreateMonitoredItems calls (up to the timeout)
	ItemsPerS     float64 `json:"items_per_s"`    // Created / CreateS
	FirstBatchS   float64 `json:"first_batch_s"`  // the first request's round trip
	LastBatchS    float64 `json:"last_batch_s"`   // the last completed request's round trip
	CreateTimeout bool    `json:"create_timeout"` // the timeout passed during creation

	DeleteS       float64 `json:"delete_s"` // DeleteSubscriptions round trip
	DeleteTimeout bool    `json:"delete_timeout"`
	DeleteStatus  string  `json:"delete_status,omitempty"`

	HeapBeforeMiB      float64 `json:"heap_before_mib"`       // after setup, after GC
	HeapAfterMiB       float64 `json:"heap_after_mib"`        // after creation, after GC
	HeapAfterDeleteMiB float64 `json:"heap_after_delete_mib"` // after deletion, after GC
	HeapPerItemB       float64 `json:"heap_per_item_b"`       // (after − before) / Created

	Error string `json:"error,omitempty"`
}

// namespaceURI is the bench server's ApplicationURI and so namespace 1.
const namespaceURI = "urn:otopcua:bench:items"

// firstVarID is the numeric id of the first variable in namespace 1.
const firstVarID = 1000

// callSlack is added to the remaining case budget for a request's own
// timeout, so that the case deadline (ctx), not the request, ends a slow
// call and the two do not race.
const callSlack = time.Second

// RunCase runs c against an in-process otopcua server over loopback TCP and
// returns what it measured. It returns by p.Timeout (plus a second) whatever
// the server does; a case that ran out of time has CreateTimeout or
// DeleteTimeout set and the figures gathered until then. The server may
// still be busy when RunCase returns after a timeout: the caller runs each
// case in its own process and exits.
func RunCase(c Case, p Params) Result {
	res := Result{Bench: "items", Case: c.String(), Layout: c.Layout, Items: c.Items, Batch: p.Batch,
		SamplingMs: ms(p.Sampling), TimeoutS: p.Timeout.Seconds()}
	ctx, cancel := context.WithTimeout(context.Background(), p.Timeout)
	defer cancel()
	var closers []func() error
	if err := runCase(ctx, c, p, &res, &closers); err != nil {
		res.Error = err.Error()
	}
	if ctx.Err() != nil {
		// The server may be busy for a long while yet (closing the session
		// deletes every item); the process is about to exit anyway.
		return res
	}
	for i := len(closers) - 1; i >= 0; i-- {
		_ = closers[i]()
	}
	return res
}

// runCase does the work of RunCase; it appends to closers what RunCase
// closes when the case ended in time.
func runCase(ctx context.Context, c Case, p Params, res *Result, closers *[]func() error) error {
	t0 := time.Now()
	srv, err := newServer(ctx, c, p.Batch)
	if err != nil {
		return err
	}
	*closers = append(*closers, srv.Close)
	ch, err := uaclient.Dial(ctx, srv.EndpointURL(), uaclient.Options{})
	if err != nil {
		return err
	}
	*closers = append(*closers, ch.Close)
	sess, err := uaclient.NewSession(ctx, ch, "bench-items", time.Hour, 30*time.Second)
	if err != nil {
		return err
	}
	resp, err := sess.Call(ctx, &ua.CreateSubscriptionRequest{
		RequestedPublishingInterval: 1000,
		RequestedLifetimeCount:      3600,
		RequestedMaxKeepAliveCount:  10,
		PublishingEnabled:           true,
	}, 30*time.Second)
	if err != nil {
		return fmt.Errorf("CreateSubscription: %w", err)
	}
	subID := resp.(*ua.CreateSubscriptionResponse).SubscriptionID
	res.SetupS = time.Since(t0).Seconds()
	res.HeapBeforeMiB = heapMiB()

	if err := createAll(ctx, sess, subID, c, p, res); err != nil {
		return err
	}
	if !res.CreateTimeout {
		res.HeapAfterMiB = heapMiB()
		if res.Created > 0 {
			res.HeapPerItemB = (res.HeapAfterMiB - res.HeapBeforeMiB) * (1 << 20) / float64(res.Created)
		}
	}
	if ctx.Err() != nil {
		// No budget left to delete: whatever is created stays.
		res.DeleteTimeout = true
		return nil
	}
	start := time.Now()
	_, err = sess.Call(ctx, &ua.DeleteSubscriptionsRequest{SubscriptionIDs: []uint32{subID}}, budget(ctx))
	res.DeleteS = time.Since(start).Seconds()
	switch {
	case timedOut(ctx, err):
		res.DeleteTimeout = true
		return nil
	case err != nil:
		res.DeleteStatus = err.Error()
		return fmt.Errorf("DeleteSubscriptions: %w", err)
	}
	res.DeleteStatus = "Good"
	res.HeapAfterDeleteMiB = heapMiB()
	return nil
}

// newServer starts an otopcua server on a kernel-picked loopback port with
// the variables c needs (Int64, watched: no getter).
func newServer(ctx context.Context, c Case, batch int) (*opcua.Server, error) {
	// The defaults allow 100,000 items per subscription and 250,000 per
	// server: the case says what it needs.
	srv, err := opcua.New(opcua.Config{
		Limits: limits.Limits{
			MaxMonitoredItemsPerSubscription: c.Items,
			MaxMonitoredItems:                c.Items,
			MaxMonitoredItemsPerCall:         max(limits.Defaults().MaxMonitoredItemsPerCall, batch),
		},
		ListenHost:     "127.0.0.1",
		Port:           opcua.AnyPort,
		PublicHostname: "127.0.0.1",
		ApplicationURI: namespaceURI,
		Logger:         slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})),
	})
	if err != nil {
		return nil, fmt.Errorf("opcua.New: %w", err)
	}
	as := srv.AddressSpace()
	folder := ua.NewNumericNodeID(1, 900)
	if err := as.AddFolder(folder, "Items", "", ua.NewNumericNodeID(0, id.ObjectsFolder)); err != nil {
		srv.Close()
		return nil, err
	}
	int64Type := ua.NewNumericNodeID(0, id.Int64)
	for k := range c.Variables() {
		if _, err := as.AddVariable(ua.NewNumericNodeID(1, uint32(firstVarID+k)), fmt.Sprintf("V%07d", k), "",
			folder, int64Type, int64(k), byte(ua.AccessLevelTypeCurrentRead)); err != nil {
			srv.Close()
			return nil, err
		}
	}
	if err := srv.Start(ctx); err != nil {
		srv.Close()
		return nil, fmt.Errorf("start: %w", err)
	}
	return srv, nil
}

// createAll creates c.Items items in requests of p.Batch and accounts for
// them in res; it stops at the case deadline with CreateTimeout set.
func createAll(ctx context.Context, sess *uaclient.Session, subID uint32, c Case, p Params, res *Result) error {
	start := time.Now()
	defer func() {
		res.CreateS = time.Since(start).Seconds()
		if res.CreateS > 0 {
			res.ItemsPerS = float64(res.Created) / res.CreateS
		}
	}()
	for from := 0; from < c.Items; from += p.Batch {
		req := createRequest(subID, c, p, from, min(from+p.Batch, c.Items))
		t := time.Now()
		resp, err := sess.Call(ctx, req, budget(ctx))
		took := time.Since(t).Seconds()
		if timedOut(ctx, err) {
			res.CreateTimeout = true
			return nil
		}
		if err != nil {
			return fmt.Errorf("CreateMonitoredItems [%d, %d): %w", from, from+len(req.ItemsToCreate), err)
		}
		results := resp.(*ua.CreateMonitoredItemsResponse).Results
		if len(results) != len(req.ItemsToCreate) {
			return fmt.Errorf("CreateMonitoredItems [%d, %d): %d results", from, from+len(req.ItemsToCreate), len(results))
		}
		for _, r := range results {
			if r != nil && r.StatusCode == ua.StatusOK {
				res.Created++
				continue
			}
			res.Refused++
			if res.FirstRefusal == "" {
				st := ua.StatusBad
				if r != nil {
					st = r.StatusCode
				}
				res.FirstRefusal = st.Error()
			}
		}
		if from == 0 {
			res.FirstBatchS = took
		}
		res.LastBatchS = took
	}
	return nil
}

// createRequest asks for the items [from, to) of c; item k has client
// handle k.
func createRequest(subID uint32, c Case, p Params, from, to int) *ua.CreateMonitoredItemsRequest {
	items := make([]*ua.MonitoredItemCreateRequest, 0, to-from)
	for k := from; k < to; k++ {
		v := 0
		if c.Layout == LayoutSpread {
			v = k
		}
		items = append(items, &ua.MonitoredItemCreateRequest{
			ItemToMonitor: &ua.ReadValueID{
				NodeID:       ua.NewNumericNodeID(1, uint32(firstVarID+v)),
				AttributeID:  ua.AttributeIDValue,
				DataEncoding: &ua.QualifiedName{},
			},
			MonitoringMode: ua.MonitoringModeReporting,
			RequestedParameters: &ua.MonitoringParameters{
				ClientHandle:     uint32(k),
				SamplingInterval: ms(p.Sampling),
				Filter:           ua.NewExtensionObject(nil),
				QueueSize:        1,
				DiscardOldest:    true,
			},
		})
	}
	return &ua.CreateMonitoredItemsRequest{
		SubscriptionID:     subID,
		TimestampsToReturn: ua.TimestampsToReturnBoth,
		ItemsToCreate:      items,
	}
}

// budget is the time left of the case, plus callSlack, as a request
// timeout.
func budget(ctx context.Context) time.Duration {
	dl, ok := ctx.Deadline()
	if !ok {
		return time.Hour
	}
	return max(time.Until(dl), 0) + callSlack
}

// timedOut reports whether err means the case ran out of time.
func timedOut(ctx context.Context, err error) bool {
	return err != nil && (ctx.Err() != nil || errors.Is(err, uaclient.ErrTimeout))
}

// heapMiB is the live heap after a full collection.
func heapMiB() float64 {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return float64(m.HeapAlloc) / (1 << 20)
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
