package subscription

import (
	"sync/atomic"
	"time"
)

// Limit names: the label values of otopcua_opcua_limit_refusals_total{limit}
// for the limits the engine enforces.
const (
	LimitSubscriptions                 = "subscriptions"
	LimitSubscriptionsPerSession       = "subscriptions_per_session"
	LimitMonitoredItems                = "monitored_items"
	LimitMonitoredItemsPerSubscription = "monitored_items_per_subscription"
)

// Limits lists the engine's limit names.
var Limits = []string{LimitSubscriptions, LimitSubscriptionsPerSession, LimitMonitoredItems, LimitMonitoredItemsPerSubscription}

// Stats is a snapshot of the engine's load and counters.
type Stats struct {
	// Subscriptions are the subscriptions held, orphaned ones included.
	Subscriptions int
	// MonitoredItems are the monitored items of those subscriptions.
	MonitoredItems int
	// CumulatedSubscriptions counts every subscription created since start.
	CumulatedSubscriptions uint64
	// PublishingIntervals is the number of distinct publishing intervals in
	// use.
	PublishingIntervals int
	// Refusals counts, by limit name (Limit…), the subscriptions and items
	// refused because of that limit.
	Refusals map[string]uint64
}

// counters are the engine's cumulative counts.
type counters struct {
	cumulatedSubscriptions atomic.Uint64
	subscriptions          atomic.Uint64 // refusals, by limit
	subscriptionsPerSess   atomic.Uint64
	items                  atomic.Uint64
	itemsPerSub            atomic.Uint64
}

// Stats returns the current load and counters. Safe for concurrent use;
// it takes the engine lock briefly.
func (e *Engine) Stats() Stats {
	e.mu.Lock()
	st := Stats{Subscriptions: len(e.subs), MonitoredItems: e.items}
	intervals := make(map[time.Duration]struct{})
	for _, s := range e.subs {
		s.mu.Lock()
		intervals[s.interval] = struct{}{}
		s.mu.Unlock()
	}
	e.mu.Unlock()
	st.PublishingIntervals = len(intervals)
	c := &e.counts
	st.CumulatedSubscriptions = c.cumulatedSubscriptions.Load()
	st.Refusals = map[string]uint64{
		LimitSubscriptions:                 c.subscriptions.Load(),
		LimitSubscriptionsPerSession:       c.subscriptionsPerSess.Load(),
		LimitMonitoredItems:                c.items.Load(),
		LimitMonitoredItemsPerSubscription: c.itemsPerSub.Load(),
	}
	return st
}
