package host

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"time"

	"github.com/gopcua/opcua/ua"

	"github.com/otopcua/otopcua/actors"
	"github.com/otopcua/otopcua/alarms"
	"github.com/otopcua/otopcua/cluster/pubsub"
	"github.com/otopcua/otopcua/config"
	"github.com/otopcua/otopcua/configdb"
	"github.com/otopcua/otopcua/dataplane"
	"github.com/otopcua/otopcua/gate"
	"github.com/otopcua/otopcua/historian"
	"github.com/otopcua/otopcua/internal/mutation"
	"github.com/otopcua/otopcua/localdb"
	"github.com/otopcua/otopcua/opcua"
	"github.com/otopcua/otopcua/opcua/conditions"
	"github.com/otopcua/otopcua/telemetry"
)

// alarmPlane is a driver node's alarms: the scripted-alarm engine (the
// alarm-host actor), the Part 9 conditions it drives, and the historian
// that turns every transition received on the alerts topic into a row of
// the Config DB's alarm_history, drained by the Primary only.
type alarmPlane struct {
	engine *alarms.Engine
	conds  *conditions.Manager
	hist   *historian.Historian // nil without a LocalDb
	cancel context.CancelFunc
}

// startAlarms starts the engine and, when the node has its LocalDb, the
// historian. Deployments reach the engine through apply.
func startAlarms(cfg *config.Config, tree *actors.Tree, srv *opcua.Server, space *dataplane.Space, db *configdb.DB,
	local *localdb.DB, g *gate.Guard, med *pubsub.Mediator, self uint64, metrics *telemetry.Metrics,
	logger *slog.Logger, fwd *forwarding, newer *newerEpochs, silent bool, up alarms.UpstreamMethods) (*alarmPlane, error) {
	ap := &alarmPlane{}
	act := &conditionActions{g: g, fwd: fwd}
	ap.conds = conditions.NewManager(srv, act)
	eng, err := alarms.New(alarms.Options{
		ClusterID: cfg.Node.ClusterId, NodeID: cfg.Cluster.NodeID(), UID: self,
		Root: tree.Root(), Parent: tree, Values: tagValues{space}, Gate: g, PubSub: med,
		Sink:    conditionSink{m: ap.conds, space: space, log: logger},
		Logger:  logger.With("component", "alarms"),
		Metrics: alarms.Metrics{Meter: metrics.Meter()},
		// Acknowledge and Confirm of an upstream condition go back to
		// its device (the Primary's driver host).
		Upstream: up,
	})
	if err != nil {
		ap.conds.Close()
		return nil, err
	}
	ap.engine = eng
	act.e = eng
	if fwd != nil {
		fwd.engine.Store(eng)
	}
	if local == nil {
		logger.Error("no LocalDb: alarm transitions are not historized on this node")
		return ap, nil
	}
	hopts := historian.Options{
		ClusterID: cfg.Node.ClusterId, Local: local, Central: db, Parent: tree,
		Gate: func() (bool, string, uint64) {
			if silent {
				return false, "test mutation " + mutation.HistorianSilent, 0
			}
			d := g.Check(gate.SiteHistorianDrain)
			return d.Allow, d.Reason.String(), d.Epoch
		},
		Logger: logger.With("component", "historian"),
	}
	if newer != nil {
		hopts.OnNewerEpoch = newer.stored
	}
	h, err := historian.New(hopts)
	if err != nil {
		ap.stop()
		return nil, err
	}
	if err := h.RegisterMetrics(metrics.Meter()); err != nil {
		ap.stop()
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	ap.cancel = cancel
	eng.OnTransition(func(t alarms.Transition) {
		if err := h.Enqueue(ctx, historyEvent(t)); err != nil && !errors.Is(err, historian.ErrOtherCluster) {
			logger.Error("alarm transition not queued for history", "alarm", t.Alarm, "transition", t.TransitionID, "err", err)
		}
	})
	if err := h.Start(ctx); err != nil {
		cancel()
		ap.stop()
		return nil, err
	}
	ap.hist = h
	if err := srv.SetEventHistory(alarmHistory{h: h, space: space, clusterID: cfg.Node.ClusterId}); err != nil {
		logger.Error("OPC UA HistoryRead of alarm history unavailable", "err", err)
	}
	return ap, nil
}

// alertsHandler is GET /alerts: the current alerts of this node's
// ClusterId, each once.
func (ap *alarmPlane) alertsHandler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Cache-Control", "no-store")
		list := ap.engine.Alerts()
		if list == nil {
			list = []alarms.Alert{}
		}
		_ = json.NewEncoder(w).Encode(map[string]any{"alerts": list})
	})
}

func (ap *alarmPlane) stop() {
	if ap == nil {
		return
	}
	ap.engine.Stop()
	if ap.hist != nil {
		ap.hist.Stop()
		ap.cancel()
	}
	ap.conds.Close()
}

func historyEvent(t alarms.Transition) historian.Event {
	return historian.Event{
		ClusterID: t.ClusterID, Alarm: t.Alarm, TransitionID: t.TransitionID, Kind: string(t.Kind),
		Time: t.Time, Severity: t.Severity, Message: t.Message, Source: t.Source, Value: t.Value,
		User: t.User, Comment: t.Comment,
		Active: t.Active, Acked: t.Acked, Confirmed: t.Confirmed, Enabled: t.Enabled,
	}
}

// conditionActions are the condition methods, answered by the engine
// (which applies the Primary gate), or by the Primary's engine under
// OpcUa:WriteMode forward when this node is not the Primary (fwd).
type conditionActions struct {
	e   *alarms.Engine
	g   *gate.Guard
	fwd *forwarding // nil or not sending: not forwarded
}

func (a *conditionActions) Acknowledge(name string, eventID []byte, comment ua.LocalizedText, by conditions.Caller) ua.StatusCode {
	return a.fwd.ack(a.g, a.e, opAcknowledge, ackOp{Name: name, Comment: comment.Text}, eventID, by, func() ua.StatusCode {
		return a.e.Acknowledge(name, eventID, comment.Text, by.User)
	})
}

func (a *conditionActions) Confirm(name string, eventID []byte, comment ua.LocalizedText, by conditions.Caller) ua.StatusCode {
	return a.fwd.ack(a.g, a.e, opConfirm, ackOp{Name: name, Comment: comment.Text}, eventID, by, func() ua.StatusCode {
		return a.e.Confirm(name, eventID, comment.Text, by.User)
	})
}

func (a *conditionActions) Enable(name string, by conditions.Caller) ua.StatusCode {
	return a.fwd.ack(a.g, a.e, opEnable, ackOp{Name: name}, nil, by, func() ua.StatusCode { return a.e.Enable(name, nil, "", by.User) })
}

func (a *conditionActions) Disable(name string, by conditions.Caller) ua.StatusCode {
	return a.fwd.ack(a.g, a.e, opDisable, ackOp{Name: name}, nil, by, func() ua.StatusCode { return a.e.Disable(name, nil, "", by.User) })
}

func (a *conditionActions) AddComment(name string, eventID []byte, comment ua.LocalizedText, by conditions.Caller) ua.StatusCode {
	return a.fwd.ack(a.g, a.e, opAddComment, ackOp{Name: name, Comment: comment.Text}, eventID, by, func() ua.StatusCode {
		return a.e.AddComment(name, eventID, comment.Text, by.User)
	})
}

// conditionSink shows the engine's alarms as Part 9 conditions: the
// condition ns=N;s=<device>/<alarm> under its source tag's device folder.
type conditionSink struct {
	m     *conditions.Manager
	space *dataplane.Space
	log   *slog.Logger
}

// An upstream condition (d.Upstream) is ns=N;s=<alarm name> =
// <device>/<upstream ConditionId>, under the device folder; its
// SourceNode is the tag mirroring the upstream SourceNode, else the
// device folder.
func (s conditionSink) Define(d alarms.Definition) {
	spec := conditions.Spec{
		Name:       d.Name,
		NodeID:     ua.NewStringNodeID(s.space.Namespace(), d.SourceDevice+"/"+d.Name),
		Parent:     s.space.DeviceNodeID(d.SourceDevice),
		SourceNode: s.space.TagNodeID(d.SourceDevice, d.SourceTag),
		SourceName: d.Source,
		Severity:   uint16(d.Severity),
		Message:    d.Message,
	}
	if d.Upstream != "" {
		spec.NodeID = ua.NewStringNodeID(s.space.Namespace(), d.Name)
		if d.SourceTag == "" {
			spec.SourceNode = s.space.DeviceNodeID(d.SourceDevice)
		}
	}
	err := s.m.Define(spec)
	if errors.Is(err, conditions.ErrConflict) {
		// Redefined (a new condition or source): start afresh.
		_ = s.m.Remove(d.Name)
		err = s.m.Define(spec)
	}
	if err != nil {
		s.log.Error("alarm condition not defined", "alarm", d.Name, "err", err)
	}
}

func (s conditionSink) Update(name string, st alarms.State) {
	q := ua.StatusOK
	if st.Quality != alarms.QualityGood {
		q = ua.StatusBadConfigurationError
	}
	_, err := s.m.Update(name, conditions.State{
		Enabled: st.Enabled, Active: st.Active, Acked: st.Acked, Confirmed: st.Confirmed, Retain: st.Retain,
		Severity: uint16(st.Severity), Message: st.Message, Comment: st.Comment, ClientUserID: st.User,
		Quality: q, Time: st.Time, EventID: st.LastEventID,
	})
	if err != nil {
		s.log.Error("alarm condition not updated", "alarm", name, "err", err)
	}
}

func (s conditionSink) Remove(name string) {
	if err := s.m.Remove(name); err != nil && !errors.Is(err, conditions.ErrUnknown) {
		s.log.Error("alarm condition not removed", "alarm", name, "err", err)
	}
}

// tagValues is the data plane's address space as the engine's ValueSource:
// the tag Variable ns=N;s=<device>/<tag>, its current reading first.
type tagValues struct{ space *dataplane.Space }

func (v tagValues) Watch(device, tag string, fn func(value any, status ua.StatusCode, at time.Time)) (cancel func()) {
	deliver := func(dv *ua.DataValue) {
		var value any
		if dv.Value != nil {
			value = dv.Value.Value()
		}
		fn(value, dv.Status, dv.SourceTimestamp)
	}
	cancel, status := v.space.AddressSpace().Watch(v.space.TagNodeID(device, tag), deliver)
	if status != ua.StatusOK {
		fn(nil, ua.StatusBadWaitingForInitialData, time.Now())
		return cancel
	}
	if variable := v.space.Variable(device, tag); variable != nil {
		if dv := variable.Value(); dv != nil {
			deliver(dv)
			return cancel
		}
	}
	fn(nil, ua.StatusBadWaitingForInitialData, time.Now())
	return cancel
}
