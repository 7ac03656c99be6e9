package alarms

import (
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/gopcua/opcua/ua"
	"github.com/jonboulle/clockwork"
	"google.golang.org/protobuf/proto"

	"github.com/otopcua/otopcua/actors"
	"github.com/otopcua/otopcua/cluster/pubsub"
	"github.com/otopcua/otopcua/deployment"
	"github.com/otopcua/otopcua/gate"
)

// ActorName is the engine actor's name.
const ActorName = "alarm-host"

// Defaults of Options.
const (
	DefaultSnapshotInterval  = 10 * time.Second
	DefaultRoleCheckInterval = 250 * time.Millisecond
	DefaultCreditTTL         = 10 * time.Second
	DefaultAskTimeout        = 5 * time.Second
	DefaultTakeoverSettle    = time.Second
)

// ValueSource is where the engine reads tags (the host adapts the data
// plane's address space: the tag's Variable ns=N;s=<device>/<tag>).
type ValueSource interface {
	// Watch calls fn with the tag's current reading at once — a Bad
	// status (BadWaitingForInitialData) when it has none, or when the tag
	// does not exist — and then with every new reading, until cancel.
	// value is the reading as the drivers deliver it (bool, int16, uint16,
	// int32, uint32, float32, float64). fn may be called from any
	// goroutine, concurrently for different tags and synchronously inside
	// Watch; it does not block. cancel may be called more than once.
	Watch(device, tag string, fn func(value any, status ua.StatusCode, at time.Time)) (cancel func())
}

// PubSub is the cluster's distributed pub/sub (*pubsub.Mediator).
type PubSub interface {
	// Publish sends msg to every subscriber of topic in the cluster, this
	// node's included; it never blocks on the network.
	Publish(topic string, msg proto.Message) error
	// Subscribe calls fn for every later message of topic, on the
	// mediator's goroutine; fn must not block.
	Subscribe(topic string, fn pubsub.Handler) (cancel func())
}

// Sink receives every change of every alarm, for the OPC UA surface (the
// conditions under the Server object). Its methods are called from the
// engine's goroutine, one at a time, in the order of the changes; they must
// not block and must not call back into the Engine's methods that wait
// for it (Apply, Acknowledge, …). A panic is recovered and logged.
type Sink interface {
	// Define announces an alarm's definition: a new alarm, one whose
	// condition or source a deployment changed (it starts afresh: the
	// Update that follows says ChangeDefined), or one whose severity or
	// message changed (its state stays: the Update says ChangeDefinition).
	Define(def Definition)
	// Update is the alarm's new state.
	Update(name string, st State)
	// Remove says the alarm is no longer deployed.
	Remove(name string)
}

// Options configure an Engine. ClusterID, NodeID, UID, Root, Values,
// Gate and PubSub are required.
type Options struct {
	// ClusterID is Node:ClusterId; the engine applies documents of this
	// ClusterId and only takes its transitions from the alerts topic.
	ClusterID string
	// NodeID is this node's host:port, the Publisher of its transitions.
	NodeID string
	// UID is this process's incarnation uid (membership.UniqueAddress):
	// TransitionIDs are unique across restarts.
	UID uint64
	// Root sends to the engine actor.
	Root *actor.RootContext
	// Parent spawns it: the node's supervision tree. Default:
	// actors.Plain(Root, Clock).
	Parent actors.Parent
	Values ValueSource
	// Gate is the node's Primary gate (its Source the redundancy
	// RoleView): the engine looks at it on every role check and asks it
	// for every detection (gate.SiteAlarmEmit) and method call
	// (gate.SiteAck), which it counts when denied; its Input tells
	// whether this node is a member yet and the only driver member.
	Gate   *gate.Guard
	PubSub PubSub
	// Sink receives the state changes. Default: none.
	Sink Sink
	// Clock drives the snapshot and role-check timers. Default: wall clock.
	Clock clockwork.Clock
	// Logger. Default: discard.
	Logger  *slog.Logger
	Metrics Metrics
	// SnapshotInterval is how often the Primary publishes its alarm-state
	// snapshot. Default 10 s.
	SnapshotInterval time.Duration
	// RoleCheckInterval is how often the engine looks at its role (to
	// publish its pending detections when it became Primary) and lets
	// credits expire. Default 250 ms.
	RoleCheckInterval time.Duration
	// CreditTTL is the shortest time a credit waits for this node's own
	// detection; an alarm's TTL is the greater of this and three poll
	// intervals of the slowest device its condition reads. Default 10 s.
	CreditTTL time.Duration
	// AskTimeout bounds Apply and the methods. Default 5 s.
	AskTimeout time.Duration
	// TakeoverSettle is how long a node that becomes the acting Primary
	// keeps reconciling as a Secondary when another node published
	// alarm transitions or snapshots here within TakeoverSettle before:
	// the old Primary's last alerts, sent before it died, may still be
	// on their way through this node's pipeline, and a detection of the
	// same change published meanwhile would be stored twice. Its pending
	// detections are published when it ends (at the next role check).
	// Default 1 s.
	TakeoverSettle time.Duration
	// Upstream sends Acknowledge and Confirm of an upstream condition
	// (Engine.Upstream) back to its device. Default nil: they answer
	// BadNotSupported.
	Upstream UpstreamMethods
}

func (o *Options) defaults() error {
	var missing []string
	for _, f := range []struct {
		name string
		ok   bool
	}{{"ClusterID", o.ClusterID != ""}, {"NodeID", o.NodeID != ""}, {"UID", o.UID != 0}, {"Root", o.Root != nil},
		{"Values", o.Values != nil}, {"Gate", o.Gate != nil}, {"PubSub", o.PubSub != nil}} {
		if !f.ok {
			missing = append(missing, f.name)
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("alarms: Options need %v", missing)
	}
	if o.Clock == nil {
		o.Clock = clockwork.NewRealClock()
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Sink == nil {
		o.Sink = nopSink{}
	}
	if o.SnapshotInterval <= 0 {
		o.SnapshotInterval = DefaultSnapshotInterval
	}
	if o.RoleCheckInterval <= 0 {
		o.RoleCheckInterval = DefaultRoleCheckInterval
	}
	if o.CreditTTL <= 0 {
		o.CreditTTL = DefaultCreditTTL
	}
	if o.AskTimeout <= 0 {
		o.AskTimeout = DefaultAskTimeout
	}
	if o.TakeoverSettle <= 0 {
		o.TakeoverSettle = DefaultTakeoverSettle
	}
	return nil
}

type nopSink struct{}

func (nopSink) Define(Definition)    {}
func (nopSink) Update(string, State) {}
func (nopSink) Remove(string)        {}

// Engine is the scripted-alarm engine of one node: an actor that holds
// every alarm of the applied deployment, evaluates it on every reading of
// a tag its condition reads, and keeps it in step with the Primary (see the
// package documentation). Its methods may be called from any goroutine.
type Engine struct {
	o    Options
	pid  *actor.PID
	view view
	inst *instruments

	hooks atomic.Pointer[[]func(Transition)]

	stopOnce sync.Once
}

// New starts an engine with no alarms; Apply gives it a deployment.
func New(o Options) (*Engine, error) {
	if err := o.defaults(); err != nil {
		return nil, err
	}
	e := &Engine{o: o}
	inst, err := o.Metrics.register(o.ClusterID, &e.view)
	if err != nil {
		return nil, err
	}
	e.inst = inst
	core := newCore(e)
	parent := o.Parent
	if parent == nil {
		parent = actors.Plain(o.Root, o.Clock)
	}
	props := parent.Props("AlarmHostActor", func() actor.Actor { return &engineActor{c: core} })
	pid, err := parent.SpawnNamed(props, ActorName)
	if err != nil {
		return nil, fmt.Errorf("alarms: spawn %s: %w", ActorName, err)
	}
	e.pid = pid
	return e, nil
}

// ErrClusterID is returned by Apply for a document of another ClusterId.
var ErrClusterID = errors.New("alarms: the deployment is of another ClusterId")

// Apply makes the engine hold exactly doc's alarms: it compiles every
// condition once, defines new alarms, redefines those whose condition or
// source changed (they start afresh), updates the severity and message of
// the others (keeping their state), removes those that went, watches the
// tags the conditions read and evaluates the new alarms. doc must be valid
// (deployment.Decode).
func (e *Engine) Apply(doc *deployment.Document) error {
	if doc.ClusterId != e.o.ClusterID {
		return fmt.Errorf("%w: %q, this node serves %q", ErrClusterID, doc.ClusterId, e.o.ClusterID)
	}
	compiled, err := deployment.CompileAlarms(doc)
	if err != nil {
		return fmt.Errorf("alarms: %w", err)
	}
	res, err := actors.Ask[applyResult](e.o.Root, e.pid, applyMsg{doc: doc, compiled: compiled}, e.o.AskTimeout)
	if err != nil {
		return err
	}
	return res.err
}

// Acknowledge acknowledges alarm name (OPC UA Acknowledge). eventID, when
// not empty, must be one the alarm issued since it last went active
// (State.LastEventID), else BadEventIdUnknown. The Primary gate decides
// first: on a node that is not the Primary it returns BadInvalidState
// (counted at site ack; logged as a Warning while the role is unknown).
// Other results: BadNodeIdUnknown (no such alarm), BadConditionDisabled,
// BadConditionBranchAlreadyAcked, BadTimeout (the engine did not answer).
// The change is published on the alerts topic; every node applies it.
func (e *Engine) Acknowledge(name string, eventID []byte, comment, user string) ua.StatusCode {
	return e.call(KindAcked, name, eventID, comment, user)
}

// Confirm confirms alarm name (OPC UA Confirm), as Acknowledge; also
// BadConditionBranchAlreadyConfirmed, and BadInvalidState while it is not
// acknowledged.
func (e *Engine) Confirm(name string, eventID []byte, comment, user string) ua.StatusCode {
	return e.call(KindConfirmed, name, eventID, comment, user)
}

// Enable enables alarm name (it starts afresh and is evaluated at once);
// BadConditionAlreadyEnabled when enabled. eventID and comment are not
// used; user is recorded.
func (e *Engine) Enable(name string, eventID []byte, comment, user string) ua.StatusCode {
	return e.call(KindEnabled, name, eventID, comment, user)
}

// Disable disables alarm name (not evaluated, not retained);
// BadConditionAlreadyDisabled when disabled. eventID and comment are not
// used; user is recorded.
func (e *Engine) Disable(name string, eventID []byte, comment, user string) ua.StatusCode {
	return e.call(KindDisabled, name, eventID, comment, user)
}

// AddComment sets the comment of alarm name (OPC UA AddComment), as
// Acknowledge.
func (e *Engine) AddComment(name string, eventID []byte, comment, user string) ua.StatusCode {
	return e.call(KindComment, name, eventID, comment, user)
}

// CheckEvent checks what Acknowledge, Confirm and AddComment check of
// their EventId on this node, without the Primary gate and without acting:
// Good when eventID is empty or one alarm name issued here since it last
// went active; BadEventIdUnknown, BadNodeIdUnknown, or BadTimeout (the
// engine did not answer). EventIds are this node's own: a condition
// method sent to the Primary is checked here, where the client saw them.
func (e *Engine) CheckEvent(name string, eventID []byte) ua.StatusCode {
	st, err := actors.Ask[ua.StatusCode](e.o.Root, e.pid, eventMsg{name: name, eventID: append([]byte(nil), eventID...)}, e.o.AskTimeout)
	if err != nil {
		return ua.StatusBadTimeout
	}
	return st
}

func (e *Engine) call(kind Kind, name string, eventID []byte, comment, user string) ua.StatusCode {
	res, err := actors.Ask[opResult](e.o.Root, e.pid,
		opMsg{kind: kind, name: name, eventID: append([]byte(nil), eventID...), comment: comment, user: user}, e.o.AskTimeout)
	if err != nil {
		e.o.Logger.Warn("alarm method not answered", "alarm", name, "method", string(kind), "err", err)
		return ua.StatusBadTimeout
	}
	if res.up == nil {
		return res.status
	}
	if e.o.Upstream == nil {
		return ua.StatusBadNotSupported
	}
	// An upstream condition's Acknowledge or Confirm: the upstream
	// decides; its event brings the new state to every node.
	st := e.o.Upstream.AckCondition(res.up.device, res.up.id, res.up.confirm, comment)
	e.o.Logger.Info("alarm method sent upstream", "alarm", name, "method", string(kind), "user", user, "status", statusName(st))
	return st
}

// Alerts returns the current alerts of this ClusterId as this node holds
// them: every retained alarm (active, or not yet acknowledged or
// confirmed), once, by name. It never waits for the engine.
func (e *Engine) Alerts() []Alert { return e.view.alerts(e.o.ClusterID) }

// State returns the state of alarm name as this node holds it. It never
// waits for the engine.
func (e *Engine) State(name string) (State, bool) { return e.view.get(name) }

// OnTransition adds fn, called for every transition of this ClusterId the
// node receives on the alerts topic — the Primary's own publications
// included: that is where every node's historian adapter enqueues history.
// fn runs on the engine's goroutine, in the order received; it must not
// block and must not modify the Transition. A panic is recovered and
// logged.
func (e *Engine) OnTransition(fn func(Transition)) {
	for {
		old := e.hooks.Load()
		var next []func(Transition)
		if old != nil {
			next = append(next, *old...)
		}
		next = append(next, fn)
		if e.hooks.CompareAndSwap(old, &next) {
			return
		}
	}
}

// Stop stops the engine: its watches, subscriptions and timers end.
func (e *Engine) Stop() {
	e.stopOnce.Do(func() {
		if err := e.o.Root.StopFuture(e.pid).Wait(); err != nil {
			e.o.Logger.Warn("alarm engine did not stop in time", "err", err)
		}
	})
}

// sync waits until the engine handled every message sent before it (a
// round-trip barrier for tests).
func (e *Engine) sync() error {
	_, err := actors.Ask[struct{}](e.o.Root, e.pid, syncMsg{}, e.o.AskTimeout)
	return err
}
