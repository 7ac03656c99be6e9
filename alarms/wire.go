package alarms

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/wrapperspb"
)

// Cluster pub/sub topics of the alarm engine. Both carry JSON in a
// google.protobuf.BytesValue (the pub/sub carries generated protobuf
// messages only).
const (
	// TopicAlerts carries every Transition the Primary of a ClusterId
	// publishes (pubsub.TopicAlerts); every node of every ClusterId
	// receives it.
	TopicAlerts = "alerts"
	// TopicAlarmState carries the Primary's StateSnapshot every
	// SnapshotInterval.
	TopicAlarmState = "alarm-state"
)

// MaxWireSize is the largest alerts or alarm-state payload decoded.
const MaxWireSize = 4 << 20

// Transition is one change of one alarm as the Primary publishes it on the
// alerts topic: active/inactive from evaluation, the others from a method
// call on the Primary. The state fields are the alarm's state after the
// change.
type Transition struct {
	ClusterID string `json:"clusterId"`
	Alarm     string `json:"alarm"`
	// TransitionID is unique per real transition: the publisher's
	// incarnation uid (16 hex digits), the alarm and the publisher's
	// sequence number for the alarm, "<uid>/<alarm>/<seq>". It is the
	// historian's idempotency key.
	TransitionID string `json:"transitionId"`
	Kind         Kind   `json:"kind"`
	// Time is when the change happened: the source time of the reading
	// that made it, or when the method was called.
	Time     time.Time `json:"time"`
	Severity int       `json:"severity"`
	Message  string    `json:"message,omitempty"`
	// Source is the alarm's source tag, "device/tag".
	Source string `json:"source"`
	// Value shows the tags the condition read, "press1.Temperature=81.5".
	Value   string `json:"value,omitempty"`
	User    string `json:"user,omitempty"`
	Comment string `json:"comment,omitempty"`

	Active    bool `json:"active"`
	Acked     bool `json:"acked"`
	Confirmed bool `json:"confirmed"`
	Enabled   bool `json:"enabled"`

	// Publisher is the publishing node's NodeId (host:port); Epoch the
	// redundancy epoch of its ClusterId when it published.
	Publisher string `json:"publisher"`
	Epoch     uint64 `json:"epoch"`
}

// condition is the state the transition carries.
func (t *Transition) condition() Condition {
	return Condition{Enabled: t.Enabled, Active: t.Active, Acked: t.Acked, Confirmed: t.Confirmed, Comment: t.Comment, User: t.User}
}

// StateSnapshot is the Primary's state of every alarm of its ClusterId, on
// the alarm-state topic: a node that restarted, or missed a transition,
// learns acknowledged, confirmed, enabled and comment from it.
type StateSnapshot struct {
	ClusterID string `json:"clusterId"`
	Publisher string `json:"publisher"`
	// Incarnation is the publisher's uid, 16 hex digits.
	Incarnation string       `json:"incarnation"`
	Epoch       uint64       `json:"epoch"`
	Time        time.Time    `json:"time"`
	Alarms      []AlarmState `json:"alarms"`
}

// AlarmState is one alarm in a StateSnapshot.
type AlarmState struct {
	Alarm     string `json:"alarm"`
	Active    bool   `json:"active"`
	Acked     bool   `json:"acked"`
	Confirmed bool   `json:"confirmed"`
	Enabled   bool   `json:"enabled"`
	Comment   string `json:"comment,omitempty"`
	User      string `json:"user,omitempty"`
}

func (s *AlarmState) condition() Condition {
	return Condition{Enabled: s.Enabled, Active: s.Active, Acked: s.Acked, Confirmed: s.Confirmed, Comment: s.Comment, User: s.User}
}

// ErrWire is wrapped by the decoders for a message that is not a valid
// transition or snapshot.
var ErrWire = errors.New("alarms: invalid message")

// Encode returns t as the alerts topic carries it.
func (t *Transition) Encode() *wrapperspb.BytesValue { return wrapperspb.Bytes(mustJSON(t)) }

// Encode returns s as the alarm-state topic carries it.
func (s *StateSnapshot) Encode() *wrapperspb.BytesValue { return wrapperspb.Bytes(mustJSON(s)) }

func mustJSON(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic("alarms: invariant broken: a wire type does not encode: " + err.Error())
	}
	return b
}

// DecodeTransition reads a message of the alerts topic. Unknown fields are
// ignored (a newer node may add some); the required ones must be there:
// clusterId, alarm, transitionId, a kind of Transitions, a time, a
// severity 0..1000.
func DecodeTransition(msg proto.Message) (Transition, error) {
	var t Transition
	if err := decodeJSON(msg, &t); err != nil {
		return Transition{}, err
	}
	switch {
	case t.ClusterID == "" || t.Alarm == "" || t.TransitionID == "":
		return Transition{}, fmt.Errorf("%w: a transition needs clusterId, alarm and transitionId", ErrWire)
	case !t.Kind.IsTransition():
		return Transition{}, fmt.Errorf("%w: transition kind %q", ErrWire, t.Kind)
	case t.Time.IsZero():
		return Transition{}, fmt.Errorf("%w: a transition needs a time", ErrWire)
	case t.Severity < 0 || t.Severity > 1000:
		return Transition{}, fmt.Errorf("%w: severity %d", ErrWire, t.Severity)
	}
	return t, nil
}

// DecodeSnapshot reads a message of the alarm-state topic.
func DecodeSnapshot(msg proto.Message) (StateSnapshot, error) {
	var s StateSnapshot
	if err := decodeJSON(msg, &s); err != nil {
		return StateSnapshot{}, err
	}
	if s.ClusterID == "" || s.Incarnation == "" {
		return StateSnapshot{}, fmt.Errorf("%w: a snapshot needs clusterId and incarnation", ErrWire)
	}
	for _, a := range s.Alarms {
		if a.Alarm == "" {
			return StateSnapshot{}, fmt.Errorf("%w: a snapshot entry without alarm", ErrWire)
		}
	}
	return s, nil
}

func decodeJSON(msg proto.Message, v any) error {
	b, ok := msg.(*wrapperspb.BytesValue)
	if !ok {
		return fmt.Errorf("%w: %T, want google.protobuf.BytesValue", ErrWire, msg)
	}
	data := b.GetValue()
	if len(data) > MaxWireSize {
		return fmt.Errorf("%w: %d bytes", ErrWire, len(data))
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(v); err != nil {
		return fmt.Errorf("%w: %v", ErrWire, err)
	}
	if dec.More() {
		return fmt.Errorf("%w: data after the JSON object", ErrWire)
	}
	return nil
}
