package drivers

import "time"

// ReadRun is a device's current run of failed polls, as Health reports it.
// A driver keeps one and advances it with Next after every poll that
// reached the device or tried to.
type ReadRun struct {
	// Failed counts the polls in a row in which no read request returned
	// values (every tag of the poll is Bad); 0 after a poll that read one.
	Failed int
	// Since is the start of the first of those polls; zero when Failed is 0.
	Since time.Time
	// LastGood is the start of the last poll that read a value; zero until
	// one does.
	LastGood time.Time
}

// Next is the run after a poll that started at start; good: at least one
// of its read requests returned values.
func (r ReadRun) Next(start time.Time, good bool) ReadRun {
	if good {
		return ReadRun{LastGood: start}
	}
	if r.Failed == 0 {
		r.Since = start
	}
	r.Failed++
	return r
}

// DegradedRule says when a device whose reads fail shows degraded: after
// Polls failed polls in a row that began at least After ago.
type DegradedRule struct {
	// Polls is the least number of failed polls in a row. Default 3.
	Polls int
	// After is the least time since the first of them began. Default 5 s.
	After time.Duration
}

// DefaultDegraded is the rule /api/deployment follows: three failed polls
// in a row, the first at least 5 s ago. A single lost answer (one failed
// poll, then a reconnect) never shows; a device that stops answering shows
// within 5 s or three poll intervals, whichever is longer.
var DefaultDegraded = DegradedRule{Polls: 3, After: 5 * time.Second}

// WithDefaults returns r with its zero fields set to DefaultDegraded's.
func (r DegradedRule) WithDefaults() DegradedRule {
	if r.Polls <= 0 {
		r.Polls = DefaultDegraded.Polls
	}
	if r.After <= 0 {
		r.After = DefaultDegraded.After
	}
	return r
}

// Condition is the state the admin API shows for a device whose Health is
// h, at now, under rule (its zero fields take DefaultDegraded's):
//
//	closed                        closed
//	reads failing by rule and the
//	last connect opened a
//	connection (h.ConnectOK)      degraded: the device takes connections
//	                              and does not answer usefully (silent,
//	                              timing out, refusing every request)
//	otherwise                     h.State: connected, connecting or
//	                              disconnected (a device whose connects fail
//	                              is disconnected, not degraded)
//
// It is pure: the same inputs give the same state.
func Condition(h Health, now time.Time, rule DegradedRule) State {
	rule = rule.WithDefaults()
	switch {
	case h.State == StateClosed:
		return StateClosed
	case h.ConnectOK && h.Reads.Failed >= rule.Polls && !now.Before(h.Reads.Since.Add(rule.After)):
		return StateDegraded
	}
	return h.State
}
