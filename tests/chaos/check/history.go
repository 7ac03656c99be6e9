package check

import (
	"slices"
	"strings"
	"time"
)

// alarmOnce checks that alarm_history holds every transition once: no two
// rows share the historian's idempotency key (ClusterId, condition,
// transition id). A duplicate is reported at its second row.
func (c *checker) alarmOnce() []Violation {
	type key struct{ cluster, condition, transition string }
	rows := byTime(c.run.Alarms, func(r AlarmRow) time.Time { return r.At })
	var out []Violation
	for _, rs := range groups(rows, func(r AlarmRow) key { return key{r.ClusterID, r.Condition, r.TransitionID} }) {
		if len(rs) > 1 {
			out = append(out, c.violation(AlarmOnce, rs[0].ClusterID, rs[0].At, rs[1].At,
				"alarm_history holds transition %s of %s %d times (at %s)", rs[0].TransitionID, rs[0].Condition, len(rs), relAll(c.origin, rs, func(r AlarmRow) time.Time { return r.At })))
		}
	}
	return out
}

// alarmStored checks that the alarm toggles of the run reach
// alarm_history: after every toggle the ClusterId stores a transition
// within Params.HistoryGap (stamped with its event time, so a Config DB
// outage that delays the drain does not count). Failover windows may
// swallow the toggles they span — the new Primary finds the register where
// the last toggle left it — but not a minute of them. One violation per
// silent stretch, at its first toggle. Toggles within HistoryGap of the
// run's end are not judged.
func (c *checker) alarmStored() []Violation {
	end := c.run.End
	if end.IsZero() {
		end = c.lastObservation()
	}
	rows := map[string][]time.Time{}
	for _, r := range byTime(c.run.Alarms, func(r AlarmRow) time.Time { return r.At }) {
		rows[r.ClusterID] = append(rows[r.ClusterID], r.At)
	}
	var out []Violation
	covered := map[string]time.Time{} // cluster → the row that answered the last judged toggle
	for _, tg := range byTime(c.run.Toggles, func(t Toggle) time.Time { return t.At }) {
		if tg.At.Add(c.p.HistoryGap).After(end) {
			continue
		}
		if until, ok := covered[tg.ClusterID]; ok && !tg.At.After(until) {
			continue // a silent stretch already reported, or answered
		}
		rs := rows[tg.ClusterID]
		i, _ := slices.BinarySearchFunc(rs, tg.At, func(a, b time.Time) int { return a.Compare(b) })
		if i < len(rs) && rs[i].Sub(tg.At) <= c.p.HistoryGap {
			covered[tg.ClusterID] = tg.At
			continue
		}
		next, what := end, "none until the run's end at"
		if i < len(rs) {
			next, what = rs[i], "next row at"
		}
		covered[tg.ClusterID] = next
		out = append(out, c.violation(AlarmStored, tg.ClusterID, tg.At, tg.At,
			"no transition in alarm_history from this toggle (%s) for %s, more than %s (%s %s)",
			tg.Source, next.Sub(tg.At).Round(time.Millisecond), c.p.HistoryGap, what, rel(c.origin, next)))
	}
	return out
}

// landing is what an acknowledged write leaves in a device's write log.
type landing struct{ device, address, value string }

func (l landing) matches(w DeviceWrite) bool {
	return w.Device == l.device && (l.address == "" || w.Address == l.address) && w.Value == l.value
}

// ackLandedOnce checks that every write the client saw acknowledged
// landed on its device exactly once.
//
// A write lands as a line of the device's write log with the tag's device
// and register and the written value, at or after the acknowledgement
// minus Params.AckTolerance (the server writes the device before it
// acknowledges; the tolerance covers that and the hosts' clocks). The rig
// should write distinct values; when one is acknowledged again on the same
// register, each acknowledgement claims the landings up to the next one's
// (minus the tolerance). No landing: the acknowledged write was lost. Two
// or more: it was applied twice.
func (c *checker) ackLandedOnce() []Violation {
	acks := byTime(c.run.Acks, func(a AckedWrite) time.Time { return a.At })
	var out []Violation
	for _, same := range groups(acks, c.landing) {
		for i, a := range same {
			var until time.Time
			if i+1 < len(same) {
				until = same[i+1].At.Add(-c.p.AckTolerance)
			}
			if v, bad := c.landedOnce(c.landing(a), a, until); bad {
				out = append(out, v)
			}
		}
	}
	return out
}

// landing is what the acknowledged write a leaves in its device's log.
func (c *checker) landing(a AckedWrite) landing {
	tag := c.clusters[c.nodeCluster[a.Server]].Tags[a.NodeID]
	return landing{tag.Device, tag.Address, a.Value}
}

// landedOnce judges one acknowledgement a of landing l, counting the
// landings before until (zero: no end).
func (c *checker) landedOnce(l landing, a AckedWrite, until time.Time) (Violation, bool) {
	from := a.At.Add(-c.p.AckTolerance)
	var hits []DeviceWrite
	for _, w := range c.run.Writes {
		if l.matches(w) && !w.At.Before(from) && (until.IsZero() || w.At.Before(until)) {
			hits = append(hits, w)
		}
	}
	hits = byTime(hits, func(w DeviceWrite) time.Time { return w.At })
	clusterID := c.deviceCluster[l.device]
	switch len(hits) {
	case 1:
		return Violation{}, false
	case 0:
		return c.violation(AckLandedOnce, clusterID, a.At, a.At,
			"write %s=%s acknowledged by %s at %s never reached device %s", a.NodeID, a.Value, a.Server, c.rel(a.At), l.device), true
	}
	since := a.At
	if hits[0].At.Before(since) {
		since = hits[0].At
	}
	return c.violation(AckLandedOnce, clusterID, since, hits[1].At,
		"write %s=%s acknowledged by %s at %s landed on device %s %d times (at %s)",
		a.NodeID, a.Value, a.Server, c.rel(a.At), l.device, len(hits), relAll(c.origin, hits, func(w DeviceWrite) time.Time { return w.At })), true
}

// relAll lists the times of xs relative to origin.
func relAll[T any](origin time.Time, xs []T, at func(T) time.Time) string {
	s := make([]string, len(xs))
	for i, x := range xs {
		s[i] = rel(origin, at(x))
	}
	return strings.Join(s, ", ")
}
