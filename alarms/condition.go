package alarms

import "github.com/gopcua/opcua/ua"

// This file is the pure Part 9 state machine of one alarm: no clock, no
// I/O. The engine stamps times and event ids around it.

// Quality is whether a condition's state can be trusted: Good when the last
// evaluation ran on Good inputs, Bad when an input was not Good, the
// evaluation failed, or the alarm was not evaluated yet.
type Quality int

const (
	QualityGood Quality = iota
	QualityBad
)

func (q Quality) String() string {
	if q == QualityGood {
		return "Good"
	}
	return "Bad"
}

// MarshalText writes Good or Bad.
func (q Quality) MarshalText() ([]byte, error) { return []byte(q.String()), nil }

// Kind names a change of a condition. The first seven are the transitions
// the Primary publishes on the alerts topic; the others only reach the Sink.
type Kind string

const (
	KindActive    Kind = "active"
	KindInactive  Kind = "inactive"
	KindAcked     Kind = "acked"
	KindConfirmed Kind = "confirmed"
	KindEnabled   Kind = "enabled"
	KindDisabled  Kind = "disabled"
	KindComment   Kind = "comment"

	// ChangeDefined: the alarm was (re)defined; its state is the start state.
	ChangeDefined Kind = "defined"
	// ChangeInitial: the first evaluation after start set the state
	// without a transition.
	ChangeInitial Kind = "initial"
	// ChangeQuality: only the quality changed.
	ChangeQuality Kind = "quality"
	// ChangeLearned: the node took the Primary's acknowledged, confirmed,
	// enabled or comment state (from a transition or a snapshot).
	ChangeLearned Kind = "learned"
	// ChangeDefinition: severity or message changed with a new deployment.
	ChangeDefinition Kind = "definition"
)

// Transitions are the kinds published on the alerts topic.
var Transitions = []Kind{KindActive, KindInactive, KindAcked, KindConfirmed, KindEnabled, KindDisabled, KindComment}

// IsTransition reports whether k is published on the alerts topic.
func (k Kind) IsTransition() bool {
	for _, t := range Transitions {
		if k == t {
			return true
		}
	}
	return false
}

// Condition is the Part 9 state of one alarm (AlarmConditionType):
//
//   - going active makes it unacknowledged and unconfirmed;
//   - Acknowledge is accepted only while unacknowledged, Confirm only
//     while acknowledged and unconfirmed;
//   - Retain (the condition is of interest: shown, listed, refreshed) is
//     Enabled && (Active || !Acked || !Confirmed);
//   - a disabled condition is not evaluated (Observe does nothing) and not
//     retained; Enable starts it afresh: inactive, acknowledged, confirmed,
//     Quality Bad until the next evaluation.
//
// The zero value is a disabled condition; NewCondition is the start state.
type Condition struct {
	Enabled, Active, Acked, Confirmed, Retain bool
	Quality                                   Quality
	// Severity (1..1000) and Message come from the alarm's definition.
	Severity int
	Message  string
	// Comment and User are those of the last Acknowledge, Confirm or
	// AddComment.
	Comment, User string
}

// NewCondition is the start state of an alarm: enabled, inactive,
// acknowledged and confirmed (nothing to attend to), Quality Bad until its
// first evaluation.
func NewCondition(severity int, message string) Condition {
	c := Condition{Enabled: true, Acked: true, Confirmed: true, Quality: QualityBad, Severity: severity, Message: message}
	c.retain()
	return c
}

func (c *Condition) retain() {
	c.Retain = c.Enabled && (c.Active || !c.Acked || !c.Confirmed)
}

// Observe applies an evaluation's result. It returns KindActive or
// KindInactive and true when the active state changed; nothing changes
// while the condition is disabled.
func (c *Condition) Observe(active bool) (Kind, bool) {
	if !c.Enabled || active == c.Active {
		return "", false
	}
	c.Active = active
	if active {
		c.Acked, c.Confirmed = false, false
	}
	c.retain()
	if active {
		return KindActive, true
	}
	return KindInactive, true
}

// SetInitial sets the active state of a first evaluation without a
// transition: an active alarm found at start is unacknowledged and
// unconfirmed (the Primary's snapshot may later say otherwise), an inactive
// one has nothing to attend to.
func (c *Condition) SetInitial(active bool) {
	if !c.Enabled {
		return
	}
	c.Active, c.Acked, c.Confirmed = active, !active, !active
	c.retain()
}

// SetQuality sets the quality and reports whether it changed.
func (c *Condition) SetQuality(q Quality) bool {
	if c.Quality == q {
		return false
	}
	c.Quality = q
	return true
}

// Acknowledge acknowledges the condition (Part 9 Acknowledge):
// BadConditionDisabled when disabled, BadConditionBranchAlreadyAcked when
// already acknowledged.
func (c *Condition) Acknowledge(comment, user string) ua.StatusCode {
	switch {
	case !c.Enabled:
		return ua.StatusBadConditionDisabled
	case c.Acked:
		return ua.StatusBadConditionBranchAlreadyAcked
	}
	c.Acked = true
	c.Comment, c.User = comment, user
	c.retain()
	return ua.StatusOK
}

// Confirm confirms the condition (Part 9 Confirm): BadConditionDisabled
// when disabled, BadConditionBranchAlreadyConfirmed when already confirmed,
// BadInvalidState while not yet acknowledged (Part 9 names no code for
// that case; confirming comes after acknowledging).
func (c *Condition) Confirm(comment, user string) ua.StatusCode {
	switch {
	case !c.Enabled:
		return ua.StatusBadConditionDisabled
	case c.Confirmed:
		return ua.StatusBadConditionBranchAlreadyConfirmed
	case !c.Acked:
		return ua.StatusBadInvalidState
	}
	c.Confirmed = true
	c.Comment, c.User = comment, user
	c.retain()
	return ua.StatusOK
}

// AddComment sets the comment (Part 9 AddComment), in any state.
func (c *Condition) AddComment(comment, user string) ua.StatusCode {
	c.Comment, c.User = comment, user
	return ua.StatusOK
}

// Enable enables a disabled condition and starts it afresh:
// BadConditionAlreadyEnabled when enabled.
func (c *Condition) Enable() ua.StatusCode {
	if c.Enabled {
		return ua.StatusBadConditionAlreadyEnabled
	}
	c.Enabled, c.Active, c.Acked, c.Confirmed, c.Quality = true, false, true, true, QualityBad
	c.retain()
	return ua.StatusOK
}

// Disable disables the condition: BadConditionAlreadyDisabled when
// disabled.
func (c *Condition) Disable() ua.StatusCode {
	if !c.Enabled {
		return ua.StatusBadConditionAlreadyDisabled
	}
	c.Enabled = false
	c.retain()
	return ua.StatusOK
}

// Learn takes the Primary's acknowledged and confirmed state, comment and
// user for the same active state, and reports whether anything changed. It
// refuses (false) when the active states differ or either side is
// disabled: the two views are then not of the same activation.
func (c *Condition) Learn(p Condition) bool {
	if !c.Enabled || !p.Enabled || c.Active != p.Active {
		return false
	}
	before := *c
	c.Acked, c.Confirmed, c.Comment, c.User = p.Acked, p.Confirmed, p.Comment, p.User
	c.retain()
	return *c != before
}
