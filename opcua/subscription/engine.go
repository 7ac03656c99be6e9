package subscription

import (
	"log/slog"

	"github.com/gopcua/opcua/ua"
	"github.com/jonboulle/clockwork"
)

// Options tune the engine. Zero values take the documented defaults.
type Options struct {
	// Clock drives publishing, sampling, keep-alive and lifetime timers.
	// Default: the real clock.
	Clock clockwork.Clock
	// Logger receives warnings about dropped sessions and late publishes.
	// Default: slog.Default().
	Logger *slog.Logger
}

// Engine owns every subscription and monitored item of one server.
//
// STUB: the method set below is the contract the server layer calls; the
// bodies are being written. Every synchronous method returns quickly and
// never blocks on a client.
type Engine struct {
	src  Source
	opts Options
}

// New returns an engine that reads values from src.
func New(src Source, opts Options) *Engine {
	if opts.Clock == nil {
		opts.Clock = clockwork.NewRealClock()
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	return &Engine{src: src, opts: opts}
}

func (e *Engine) CreateSubscription(sess SessionID, req *ua.CreateSubscriptionRequest) (*ua.CreateSubscriptionResponse, error) {
	return nil, ua.StatusBadNotImplemented
}
func (e *Engine) ModifySubscription(sess SessionID, req *ua.ModifySubscriptionRequest) (*ua.ModifySubscriptionResponse, error) {
	return nil, ua.StatusBadNotImplemented
}
func (e *Engine) SetPublishingMode(sess SessionID, req *ua.SetPublishingModeRequest) (*ua.SetPublishingModeResponse, error) {
	return nil, ua.StatusBadNotImplemented
}
func (e *Engine) DeleteSubscriptions(sess SessionID, req *ua.DeleteSubscriptionsRequest) (*ua.DeleteSubscriptionsResponse, error) {
	return nil, ua.StatusBadNotImplemented
}
func (e *Engine) CreateMonitoredItems(sess SessionID, req *ua.CreateMonitoredItemsRequest) (*ua.CreateMonitoredItemsResponse, error) {
	return nil, ua.StatusBadNotImplemented
}
func (e *Engine) ModifyMonitoredItems(sess SessionID, req *ua.ModifyMonitoredItemsRequest) (*ua.ModifyMonitoredItemsResponse, error) {
	return nil, ua.StatusBadNotImplemented
}
func (e *Engine) SetMonitoringMode(sess SessionID, req *ua.SetMonitoringModeRequest) (*ua.SetMonitoringModeResponse, error) {
	return nil, ua.StatusBadNotImplemented
}
func (e *Engine) SetTriggering(sess SessionID, req *ua.SetTriggeringRequest) (*ua.SetTriggeringResponse, error) {
	return nil, ua.StatusBadNotImplemented
}
func (e *Engine) DeleteMonitoredItems(sess SessionID, req *ua.DeleteMonitoredItemsRequest) (*ua.DeleteMonitoredItemsResponse, error) {
	return nil, ua.StatusBadNotImplemented
}
func (e *Engine) Republish(sess SessionID, req *ua.RepublishRequest) (*ua.RepublishResponse, error) {
	return nil, ua.StatusBadNotImplemented
}
func (e *Engine) TransferSubscriptions(sess SessionID, req *ua.TransferSubscriptionsRequest) (*ua.TransferSubscriptionsResponse, error) {
	return nil, ua.StatusBadNotImplemented
}

// Publish queues a Publish request. The engine answers it later through out
// (or at once when it holds a ready notification or an error).
func (e *Engine) Publish(sess SessionID, out Sender, reqID uint32, req *ua.PublishRequest) {
	_ = out.SendResponse(reqID, &ua.ServiceFault{ResponseHeader: &ua.ResponseHeader{RequestHandle: req.RequestHeader.RequestHandle, ServiceResult: ua.StatusBadNotImplemented}})
}

// SessionClosed drops the session's queued Publish requests and, when
// deleteSubscriptions is true, its subscriptions.
func (e *Engine) SessionClosed(sess SessionID, deleteSubscriptions bool) {}

// Close stops every timer and goroutine of the engine.
func (e *Engine) Close() {}
