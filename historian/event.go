package historian

import (
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"github.com/otopcua/otopcua/configdb"
	"github.com/otopcua/otopcua/localdb"
)

// Kinds of transition (Event.Kind).
const (
	KindActive    = "active"
	KindInactive  = "inactive"
	KindAcked     = "acked"
	KindConfirmed = "confirmed"
	KindEnabled   = "enabled"
	KindDisabled  = "disabled"
	KindComment   = "comment"
)

// Kinds lists every accepted Event.Kind.
var Kinds = []string{KindActive, KindInactive, KindAcked, KindConfirmed, KindEnabled, KindDisabled, KindComment}

// Event is one alarm transition to historize.
type Event struct {
	ClusterID string `json:"clusterId"`
	Alarm     string `json:"alarm"` // alarm name
	// TransitionID is unique per real transition: with ClusterID and
	// Alarm it is the idempotency key, the same on every node that
	// receives the transition.
	TransitionID string    `json:"transitionId"`
	Kind         string    `json:"kind"` // one of Kinds
	Time         time.Time `json:"time"` // when the transition happened
	Severity     int       `json:"severity"`
	Message      string    `json:"message,omitempty"`
	Source       string    `json:"source,omitempty"` // "press1/Temperature"
	Value        string    `json:"value,omitempty"`  // the source value as text
	User         string    `json:"user,omitempty"`
	Comment      string    `json:"comment,omitempty"`
	// The condition's state after the transition.
	Active    bool `json:"active"`
	Acked     bool `json:"acked"`
	Confirmed bool `json:"confirmed"`
	Enabled   bool `json:"enabled"`
}

// check refuses what cannot be keyed or is not an alarm transition. Lengths
// are the Config DB's to judge at the drain (a refused row is kept,
// poisoned, for the operator to see, instead of being lost at the source).
func (e Event) check() error {
	switch {
	case e.Alarm == "" || e.TransitionID == "":
		return fmt.Errorf("%w: alarm %q transition %q: the alarm and the transition id must not be empty", ErrInvalidEvent, e.Alarm, e.TransitionID)
	case !slices.Contains(Kinds, e.Kind):
		return fmt.Errorf("%w: alarm %q transition %q: kind %q: accepted values are %v", ErrInvalidEvent, e.Alarm, e.TransitionID, e.Kind, Kinds)
	case e.Time.IsZero():
		return fmt.Errorf("%w: alarm %q transition %q: the time is not set", ErrInvalidEvent, e.Alarm, e.TransitionID)
	case e.Severity < 0 || e.Severity > 1000:
		return fmt.Errorf("%w: alarm %q transition %q: severity %d: accepted values are 0 to 1000", ErrInvalidEvent, e.Alarm, e.TransitionID, e.Severity)
	}
	return nil
}

// queued is e as a queue row.
func (e Event) queued() localdb.QueuedEvent {
	payload, err := json.Marshal(e)
	if err != nil { // an Event holds only strings, ints, bools and a time
		panic("historian: invariant broken: an Event does not encode: " + err.Error())
	}
	return localdb.QueuedEvent{ClusterID: e.ClusterID, Alarm: e.Alarm, TransitionID: e.TransitionID, Payload: payload}
}

// decodeQueued reads a queue row back; the row's key columns win over the
// payload's.
func decodeQueued(q localdb.QueuedEvent) (Event, error) {
	var e Event
	if err := json.Unmarshal(q.Payload, &e); err != nil {
		return Event{}, fmt.Errorf("the payload is not an alarm event: %w", err)
	}
	e.ClusterID, e.Alarm, e.TransitionID = q.ClusterID, q.Alarm, q.TransitionID
	return e, nil
}

// row is e as an alarm_history row carrying payload.
func (e Event) row(payload []byte) configdb.AlarmHistoryRow {
	return configdb.AlarmHistoryRow{
		ClusterID: e.ClusterID, Alarm: e.Alarm, TransitionID: e.TransitionID, Kind: e.Kind, EventTime: e.Time,
		Severity: e.Severity, Message: e.Message, Source: e.Source, Value: e.Value, UserName: e.User, Comment: e.Comment,
		Active: e.Active, Acked: e.Acked, Confirmed: e.Confirmed, Enabled: e.Enabled, Payload: payload,
	}
}

// eventOf reads an alarm_history row as an Event.
func eventOf(r configdb.AlarmHistoryRow) Event {
	return Event{
		ClusterID: r.ClusterID, Alarm: r.Alarm, TransitionID: r.TransitionID, Kind: r.Kind, Time: r.EventTime,
		Severity: r.Severity, Message: r.Message, Source: r.Source, Value: r.Value, User: r.UserName, Comment: r.Comment,
		Active: r.Active, Acked: r.Acked, Confirmed: r.Confirmed, Enabled: r.Enabled,
	}
}
