package alarms

import (
	"sort"
	"strings"
	"sync"
	"time"
)

// Definition is an alarm as the deployment defines it, for the Sink.
type Definition struct {
	Name string
	// Source is the source tag "device/tag"; SourceDevice and SourceTag
	// its parts (the SourceNode is the tag's Variable).
	Source, SourceDevice, SourceTag string
	Condition                       string
	Severity                        int
	Message                         string
	// Upstream, when not empty, is the upstream ConditionId the alarm
	// mirrors (an opcua device with "alarms"): SourceDevice is that
	// device, SourceTag the tag mirroring the condition's SourceNode ("":
	// none; the source is the device folder), Condition "upstream <id>".
	Upstream string
}

func definitionOf(name, source, condition string, severity int, message string) Definition {
	dev, tag, _ := strings.Cut(source, "/")
	return Definition{Name: name, Source: source, SourceDevice: dev, SourceTag: tag, Condition: condition, Severity: severity, Message: message}
}

// State is one alarm's condition as this node holds it, with what the OPC
// UA surface needs to raise its event: the event id, when and why it
// changed.
type State struct {
	Condition
	// LastEventID is a fresh 16-byte id for every change: the EventId of
	// the event the surface raises for it, and what Acknowledge, Confirm
	// and AddComment accept (as do the ids of the other changes since the
	// alarm last went active). Never modified once set.
	LastEventID []byte
	// Time is when the state last changed; ActiveTime when it last went
	// active (zero if never).
	Time, ActiveTime time.Time
	// Value shows the tags of the last evaluation, "press1.Temperature=81.5".
	Value string
	// Change is what changed last.
	Change Kind
}

// Alert is one retained alarm of this ClusterId, as GET /alerts lists it.
type Alert struct {
	ClusterID  string    `json:"clusterId"`
	Alarm      string    `json:"alarm"`
	Source     string    `json:"source"`
	Severity   int       `json:"severity"`
	Message    string    `json:"message,omitempty"`
	Active     bool      `json:"active"`
	Acked      bool      `json:"acked"`
	Confirmed  bool      `json:"confirmed"`
	Enabled    bool      `json:"enabled"`
	Quality    Quality   `json:"quality"`
	ActiveTime time.Time `json:"activeTime,omitzero"`
	Time       time.Time `json:"time"`
	Value      string    `json:"value,omitempty"`
	Comment    string    `json:"comment,omitempty"`
	User       string    `json:"user,omitempty"`
}

// view is the copy of every alarm's state that Alerts, State and the
// metrics read without asking the actor. The actor writes it.
type view struct {
	mu     sync.Mutex
	alarms map[string]viewEntry // mu must be held.
}

type viewEntry struct {
	def Definition
	st  State
}

func (v *view) set(def Definition, st State) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.alarms == nil {
		v.alarms = map[string]viewEntry{}
	}
	v.alarms[def.Name] = viewEntry{def, st}
}

func (v *view) remove(name string) {
	v.mu.Lock()
	defer v.mu.Unlock()
	delete(v.alarms, name)
}

func (v *view) get(name string) (State, bool) {
	v.mu.Lock()
	defer v.mu.Unlock()
	e, ok := v.alarms[name]
	return e.st, ok
}

func (v *view) alerts(clusterID string) []Alert {
	v.mu.Lock()
	out := make([]Alert, 0, len(v.alarms))
	for _, e := range v.alarms {
		if !e.st.Retain {
			continue
		}
		st := e.st
		out = append(out, Alert{
			ClusterID: clusterID, Alarm: e.def.Name, Source: e.def.Source, Severity: st.Severity, Message: st.Message,
			Active: st.Active, Acked: st.Acked, Confirmed: st.Confirmed, Enabled: st.Enabled, Quality: st.Quality,
			ActiveTime: st.ActiveTime, Time: st.Time, Value: st.Value, Comment: st.Comment, User: st.User,
		})
	}
	v.mu.Unlock()
	sort.Slice(out, func(i, j int) bool { return out[i].Alarm < out[j].Alarm })
	return out
}

// active counts the enabled, active alarms.
func (v *view) active() int {
	v.mu.Lock()
	defer v.mu.Unlock()
	n := 0
	for _, e := range v.alarms {
		if e.st.Enabled && e.st.Active {
			n++
		}
	}
	return n
}
