// Package subscription is otopcua's subscription and monitored-item engine
// (OPC UA Part 4 §5.12–5.13): it owns every subscription and monitored item
// of one server, samples values from the address space, queues them and
// answers Publish requests. It replaces gopcua's engine, which deadlocks
// when a client vanishes while values change, ignores most parameters and
// reuses ids.
//
// # Data path
//
// The address space (a Source) calls an item's change callback on the
// writer's goroutine. The callback takes only the item's mutex and, when the
// item becomes pending, its subscription's pending-list mutex: it filters the
// value (DataChangeFilter), appends it to the item's bounded queue and puts
// the item on the subscription's report list. Items with a sampling interval
// above 0 only keep the newest change; a sampling tick moves it into the
// queue, so changes faster than the interval are coalesced to the latest
// value per interval. Sampling ticks of a subscription run at the smallest
// sampling interval of its items, on the grid of its publishing ticks.
//
// One engine goroutine works the subscriptions whose deadline has come
// (sampling, publishing, keep-alive, lifetime) on the injected clock. A
// sampling tick moves the due changes into the item queues and puts the items
// on the report list with one pendMu round. At a publishing tick it drains
// the report list into a NotificationMessage of at most
// MaxNotificationsPerPublish notifications (default 10,000) and hands the
// PublishResponse to the session's sending goroutine. When values are left,
// the message says MoreNotifications and the engine goroutine goes on at
// once with the next message on the next queued Publish request (or on the
// next request to arrive), while the sending goroutine encodes and writes
// the previous one: a cycle of 50,000 notifications is five messages built,
// encoded and sent in a pipeline on two cores. The sending goroutine exists
// while the session has responses to send and is the only caller of a
// Sender, with no lock held, so a session's responses go out in the order
// the engine made them: per subscription, by sequence number.
//
// # Event path
//
// An event item watches a notifier through the EventSource (Options.Events:
// the address space). The EventSource calls the item's event callback on
// the raiser's goroutine; it evaluates the where clause and the select
// clauses there, with no lock held (both are pure functions of the
// immutable event and the item's immutable filter), then takes the item's
// mutex and the pending-list mutex as a data change does: the event's
// fields join the item's bounded event queue (overflow per DiscardOldest,
// marked by an EventQueueOverflowEventType event) and the item joins the
// report list. A publishing tick drains event queues into an
// EventNotificationList beside the DataChangeNotification of the same
// NotificationMessage; data changes and events count alike against
// MaxNotificationsPerPublish and the retransmission bounds, and the
// message is acknowledged, republished and transferred like any other.
// Events are never sampled: an event item's sampling interval is 0.
//
// # Invariants
//
//   - Producers never wait for a client, for the engine goroutine or for a
//     service call: only for short per-item and per-subscription list locks.
//   - A client that stops reading blocks its own session's sending goroutine
//     and nothing else.
//   - Every queue is bounded: an item's queue by its revised queue size
//     (overflow per DiscardOldest, flagged with the Overflow info bits), the
//     Publish requests of a session by MaxPublishRequestsPerSession (the
//     oldest is answered BadTooManyPublishRequests), the retransmission
//     queue by MaxRetransmitMessages and MaxRetransmitNotifications (about
//     34 MB per subscription with the defaults; the newest message is kept
//     even beyond them), unsent responses of a session by twice the Publish
//     request limit.
//   - An acknowledgement that comes back in the Publish request a client
//     sends after receiving the message is never answered
//     BadSequenceNumberUnknown while the client keeps at most
//     min(MaxRetransmitMessages, MaxRetransmitNotifications /
//     MaxNotificationsPerPublish) requests in flight (20 with the
//     defaults): the server cannot send more newer messages than it has
//     requests before that one arrives.
//   - Every Publish request is answered exactly once, unless its session was
//     closed or the engine was closed first, or its response was dropped
//     (and logged) because the session's unsent responses hit their bound:
//     a client that keeps sending requests but reads no responses.
//   - Subscription and monitored item ids grow monotonically; an id in use is
//     never handed out again.
//   - Limits hold whatever the concurrency: MaxSubscriptions and
//     MaxSubscriptionsPerSession, MaxMonitoredItems and
//     MaxMonitoredItemsPerSubscription (a CreateMonitoredItems call reserves
//     its room before it registers anything, so concurrent calls cannot
//     exceed them together). Refusals are counted (Stats).
//   - Deleting a subscription, by a client, by its lifetime or by Close, is
//     O(1) under the engine's locks: its items stop queuing at once
//     (subscription.gone) and are retired — marked deleted, Source
//     registrations cancelled — with no lock held, in the background in
//     slices of retireSlice when there are many. Close waits for that.
//
// See locksordering.txt for the locks.
//
// # Behaviour worth knowing
//
//   - The Value attribute is watched (Source.Watch); any other attribute is
//     sampled by Source.Read at the item's sampling interval (0 and -1 mean
//     the publishing interval there). An unknown node or an attribute the
//     node lacks fails the item with the Source's status.
//   - Sampling interval -1 takes the publishing interval, 0 queues every
//     change, anything else is at least MinSamplingInterval.
//   - The current value is queued when an item is created, or leaves
//     Disabled, in Sampling or Reporting mode. Disabled drops the queue.
//   - DataChangeFilter triggers Status, StatusValue and StatusValueTimestamp
//     with deadband None or Absolute are supported; Percent deadbands and
//     aggregate filters fail with BadMonitoredItemFilterUnsupported, an
//     EventFilter on a data item with BadFilterNotAllowed. Index ranges fail
//     with BadIndexRangeInvalid.
//   - Event items are items on the EventNotifier attribute of a notifier
//     (BadNotSupported for other objects, BadAttributeIdInvalid for nodes
//     without the attribute) and need an EventFilter (BadEventFilterInvalid
//     without one, BadFilterNotAllowed for a DataChangeFilter). Select
//     clauses are SimpleAttributeOperands with AttributeId Value over a
//     BrowsePath the EventSource knows for the TypeDefinitionId (null is
//     BaseEventType, which matches every event; another type yields null
//     fields for events not of it), or an empty BrowsePath with AttributeId
//     NodeId (the ConditionId); IndexRange is refused. The where clause
//     supports Equals, IsNull, GreaterThan, LessThan, GreaterThanOrEqual,
//     LessThanOrEqual, Not, Between, InList, And, Or and OfType (subtypes
//     included) over ElementOperand (forward indexes only),
//     LiteralOperand and SimpleAttributeOperand; Like, Cast, BitwiseAnd,
//     BitwiseOr, InView and RelatedTo answer BadFilterOperatorUnsupported,
//     AttributeOperand BadFilterOperandInvalid. Comparisons convert between
//     numeric types (Boolean as 0/1) and otherwise compare within a type; a
//     null or incomparable operand makes a comparison null, And, Or and Not
//     use three-valued logic, and only TRUE passes. Any error fails the
//     item with BadEventFilterInvalid and an EventFilterResult whose
//     select-clause and element results say what is wrong. A field the
//     event lacks is a null Variant. At most MaxSelectClauses select
//     clauses and MaxWhereOperands where-clause operands.
//   - An event item's queue size 0 is DefaultEventQueueSize; on overflow
//     one event is discarded by the policy and an EventQueueOverflowEvent
//     (SourceNode the Server, SourceName "Internal/EventQueueOverflow")
//     marks the gap — at the head with DiscardOldest, before the newest
//     event otherwise — without taking an event's place, once per gap. It
//     passes any where clause. Leaving Disabled queues nothing (there is no
//     current value of an event); Disabled drops the queue.
//   - InjectEvents delivers events to the event items of one subscription
//     of the calling session only (ConditionRefresh and ConditionRefresh2
//     of Part 9): each item gets the events its notifier is owed, through
//     its select clauses and where clause (which RefreshStartEvent and
//     RefreshEndEvent bypass, Part 9 §4.5), queued together and in order.
//     ParseEventFilter gives other services (HistoryRead of events) the
//     same validation and field selection as event items.
//   - SetTriggering: when a triggering item queues a new value, the queued
//     values of its linked items in Sampling mode go out with the next
//     message.
//   - TimestampsToReturn is applied per item; a server timestamp the Source
//     did not set is filled with the publish time when asked for.
//   - Keep-alives and the GoodSubscriptionTransferred message carry the next
//     sequence number without consuming it. The lifetime is measured as time
//     without client activity or Publish requests (LifetimeCount ×
//     publishing interval; a CreateMonitoredItems call in progress is
//     activity until it returns); an expired subscription owes its session
//     a StatusChangeNotification BadTimeout.
//   - TimeoutHint of queued Publish requests is not enforced.
//
// # Duties of the caller
//
//  1. Call the service methods from any goroutine. They return quickly;
//     CreateMonitoredItems calls Source.Watch and Source.Read once per item,
//     with no engine lock held. A returned error is a ua.StatusCode to send
//     as a ServiceFault.
//  2. Hand each Publish request over with the Sender of the secure channel
//     it arrived on. A Sender may block on the socket, but must return once
//     its channel is closed.
//  3. Call SessionClosed when a session ends: with CloseSession's
//     DeleteSubscriptions flag, and with false when it timed out or lost its
//     channel, so that a reconnecting client can transfer its subscriptions.
//  4. Check that the caller of TransferSubscriptions may take the
//     subscriptions over (same user identity); the engine knows no users.
//  5. Set Options.MaxNotificationsPerPublish so that a NotificationMessage
//     fits the channel's maximum message size.
//  6. Call Close at shutdown; it cancels every Source registration.
//  7. Set Options.Events to the EventSource for event items to work; the
//     engine calls WatchEvents and the Check methods with no engine lock
//     held.
//
// Why goroutines and not actors: the engine is the OPC UA server's publish
// scheduler, on the hot path of every client (one send loop per session
// that writes to its socket, and the sampling loop). It is not part of the
// node's supervision tree (package actors): its limits and deadlines bound
// what a client can make it do, and a failure there is a server bug that
// ends the process rather than a component to restart under live sessions.
package subscription
