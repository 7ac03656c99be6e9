package alarms

import (
	"testing"

	"github.com/gopcua/opcua/ua"
)

// flags renders the flags as e.g. "E A !k !c R" (Enabled, Active, acKed,
// Confirmed, Retain; ! for false).
func flags(c Condition) string {
	b := func(v bool, s string) string {
		if v {
			return s
		}
		return "!" + s
	}
	return b(c.Enabled, "E") + " " + b(c.Active, "A") + " " + b(c.Acked, "k") + " " + b(c.Confirmed, "c") + " " + b(c.Retain, "R")
}

func TestConditionStateMachine(t *testing.T) {
	type op struct {
		name   string
		do     func(c *Condition) ua.StatusCode
		status ua.StatusCode
		after  string
	}
	observe := func(active bool, kind Kind, changed bool) func(c *Condition) ua.StatusCode {
		return func(c *Condition) ua.StatusCode {
			k, ch := c.Observe(active)
			if k != kind || ch != changed {
				return ua.StatusBadUnexpectedError
			}
			return ua.StatusOK
		}
	}
	ack := func(c *Condition) ua.StatusCode { return c.Acknowledge("seen", "op") }
	confirm := func(c *Condition) ua.StatusCode { return c.Confirm("fixed", "op") }
	enable := func(c *Condition) ua.StatusCode { return c.Enable() }
	disable := func(c *Condition) ua.StatusCode { return c.Disable() }
	ok := ua.StatusOK
	for _, tc := range []struct {
		name string
		ops  []op
	}{
		{"the full cycle", []op{
			{"start", func(*Condition) ua.StatusCode { return ok }, ok, "E !A k c !R"},
			{"goes active", observe(true, KindActive, true), ok, "E A !k !c R"},
			{"active again changes nothing", observe(true, "", false), ok, "E A !k !c R"},
			{"confirm before ack", confirm, ua.StatusBadInvalidState, "E A !k !c R"},
			{"ack", ack, ok, "E A k !c R"},
			{"ack twice", ack, ua.StatusBadConditionBranchAlreadyAcked, "E A k !c R"},
			{"goes inactive", observe(false, KindInactive, true), ok, "E !A k !c R"},
			{"confirm", confirm, ok, "E !A k c !R"},
			{"confirm twice", confirm, ua.StatusBadConditionBranchAlreadyConfirmed, "E !A k c !R"},
		}},
		{"inactive but unacknowledged stays retained", []op{
			{"goes active", observe(true, KindActive, true), ok, "E A !k !c R"},
			{"goes inactive", observe(false, KindInactive, true), ok, "E !A !k !c R"},
			{"ack", ack, ok, "E !A k !c R"},
			{"confirm", confirm, ok, "E !A k c !R"},
		}},
		{"re-activation before confirm makes it unacknowledged again", []op{
			{"goes active", observe(true, KindActive, true), ok, "E A !k !c R"},
			{"ack", ack, ok, "E A k !c R"},
			{"goes inactive", observe(false, KindInactive, true), ok, "E !A k !c R"},
			{"goes active", observe(true, KindActive, true), ok, "E A !k !c R"},
		}},
		{"disabled: not evaluated, not retained, refuses acks", []op{
			{"goes active", observe(true, KindActive, true), ok, "E A !k !c R"},
			{"disable", disable, ok, "!E A !k !c !R"},
			{"disable twice", disable, ua.StatusBadConditionAlreadyDisabled, "!E A !k !c !R"},
			{"not evaluated", observe(false, "", false), ok, "!E A !k !c !R"},
			{"ack refused", ack, ua.StatusBadConditionDisabled, "!E A !k !c !R"},
			{"confirm refused", confirm, ua.StatusBadConditionDisabled, "!E A !k !c !R"},
			{"enable starts afresh", enable, ok, "E !A k c !R"},
			{"enable twice", enable, ua.StatusBadConditionAlreadyEnabled, "E !A k c !R"},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := NewCondition(700, "hot")
			for _, o := range tc.ops {
				if st := o.do(&c); st != o.status {
					t.Fatalf("%s: status %v, want %v", o.name, st, o.status)
				}
				if got := flags(c); got != o.after {
					t.Fatalf("%s: %s, want %s", o.name, got, o.after)
				}
			}
		})
	}
}

func TestConditionDetails(t *testing.T) {
	c := NewCondition(500, "m")
	if c.Quality != QualityBad || c.Severity != 500 || c.Message != "m" {
		t.Fatalf("start %+v", c)
	}
	if !c.SetQuality(QualityGood) || c.SetQuality(QualityGood) {
		t.Fatal("SetQuality reports changes only")
	}
	c.Observe(true)
	if c.Acknowledge("looking", "alice") != ua.StatusOK || c.Comment != "looking" || c.User != "alice" {
		t.Fatalf("ack comment/user: %+v", c)
	}
	if c.AddComment("still", "bob") != ua.StatusOK || c.Comment != "still" || c.User != "bob" {
		t.Fatalf("comment: %+v", c)
	}
	// SetInitial: an active alarm found at start needs attention.
	s := NewCondition(1, "")
	s.SetInitial(true)
	if flags(s) != "E A !k !c R" {
		t.Fatalf("initial active %s", flags(s))
	}
	s.SetInitial(false)
	if flags(s) != "E !A k c !R" {
		t.Fatalf("initial inactive %s", flags(s))
	}
	// Learn takes the Primary's view of the same activation only.
	local := NewCondition(1, "")
	local.Observe(true)
	primary := local
	primary.Acknowledge("ok", "op")
	if !local.Learn(primary) || !local.Acked || local.Comment != "ok" || local.Learn(primary) {
		t.Fatalf("learn %+v", local)
	}
	other := NewCondition(1, "")
	if local.Learn(other) {
		t.Fatal("learned from another active state")
	}
	if (Kind("active")).IsTransition() != true || ChangeQuality.IsTransition() {
		t.Fatal("IsTransition")
	}
}
