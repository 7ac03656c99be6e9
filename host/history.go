package host

import (
	"context"
	"crypto/sha256"
	"strings"
	"time"

	"github.com/gopcua/opcua/id"
	"github.com/gopcua/opcua/ua"

	"github.com/otopcua/otopcua/configdb"
	"github.com/otopcua/otopcua/dataplane"
	"github.com/otopcua/otopcua/historian"
	"github.com/otopcua/otopcua/opcua/events"
	"github.com/otopcua/otopcua/opcua/uaserver"
)

// alarmHistory answers OPC UA HistoryRead (ReadEventDetails) from the
// Config DB's alarm_history: every notifier the conditions live under (the
// Server object, a device folder) reads the ClusterId's alarm history; a
// device folder only its own alarms' rows.
type alarmHistory struct {
	h         *historian.Historian
	space     *dataplane.Space
	clusterID string
}

func (a alarmHistory) ReadEvents(ctx context.Context, notifier *ua.NodeID, start, end time.Time, max uint32) ([]events.Event, error) {
	c := newHistoryCursor(start, end)
	device := ""
	if notifier.Namespace() == a.space.Namespace() {
		device = notifier.StringID()
	}
	limit := int(min(max, configdb.MaxAlarmHistoryBatch))
	var out []events.Event
	// A device folder's rows are read in pages of the whole ClusterId's
	// history and filtered; each page resumes at the last row's time,
	// inclusive, skipping the rows already seen at that instant (rows can
	// share a time across a page boundary). A page that brings nothing new
	// (more rows at one instant than a page holds) is read again larger.
	seen := map[string]bool{}
	page := limit
	for {
		rows, err := a.h.ReadEvents(ctx, a.clusterID, c.from, c.to, page, c.newestFirst)
		if err != nil {
			return nil, err
		}
		var fresh int
		var full bool
		out, fresh, full = a.collect(out, rows, seen, device, limit)
		if full || device == "" || len(rows) < page {
			return out, nil
		}
		if fresh == 0 {
			if page == configdb.MaxAlarmHistoryBatch {
				return out, nil // more than the largest page at one instant
			}
			page = min(2*page, configdb.MaxAlarmHistoryBatch)
			continue
		}
		seen = c.advance(rows, seen)
	}
}

// collect appends to out the rows not in seen that are device's ("" for
// every device) as events; fresh counts the rows not in seen, full reports
// that out reached limit with the last append.
func (a alarmHistory) collect(out []events.Event, rows []historian.Event, seen map[string]bool, device string, limit int) (_ []events.Event, fresh int, full bool) {
	for _, r := range rows {
		if seen[historyKey(r)] {
			continue
		}
		fresh++
		if device != "" && !strings.HasPrefix(r.Source, device+"/") {
			continue
		}
		out = append(out, a.event(r))
		if len(out) == limit {
			return out, fresh, true
		}
	}
	return out, fresh, false
}

// historyCursor is the time window a HistoryRead still has to read: from
// and to (zero: open), read from the newest when the request's end is
// before its start.
type historyCursor struct {
	from, to    time.Time
	newestFirst bool
}

func newHistoryCursor(start, end time.Time) historyCursor {
	c := historyCursor{from: start, to: end, newestFirst: end.Before(start)}
	if c.newestFirst {
		c.from, c.to = end, start
	}
	if c.from.Equal(uaserver.MinTime) {
		c.from = time.Time{}
	}
	if c.to.Equal(uaserver.MaxTime) {
		c.to = time.Time{}
	}
	if start.Equal(end) { // one instant
		c.to = c.from.Add(time.Microsecond)
	}
	return c
}

// advance moves the cursor to the time of the page's last row and returns
// the keys of the rows seen at that instant, seen's included when the
// whole page was at the cursor's instant.
func (c *historyCursor) advance(rows []historian.Event, seen map[string]bool) map[string]bool {
	last := rows[len(rows)-1].Time
	atLast := map[string]bool{}
	if (c.newestFirst && c.to.Equal(last)) || (!c.newestFirst && c.from.Equal(last)) {
		atLast = seen // a page all at the cursor's instant: keep what was seen there
	}
	for _, r := range rows {
		if r.Time.Equal(last) {
			atLast[historyKey(r)] = true
		}
	}
	if c.newestFirst {
		c.to = last
	} else {
		c.from = last
	}
	return atLast
}

// historyKey identifies a history row: the idempotency key within the
// ClusterId.
func historyKey(r historian.Event) string { return r.Alarm + "\x00" + r.TransitionID }

// event is one history row as an AlarmConditionType event: the fields a
// live condition event carries, its EventId derived from the row's key so
// that every read returns the same id.
func (a alarmHistory) event(r historian.Event) events.Event {
	sum := sha256.Sum256([]byte(r.ClusterID + "\x00" + r.Alarm + "\x00" + r.TransitionID))
	device, tag, _ := strings.Cut(r.Source, "/")
	ev := events.Event{
		EventID:     sum[:16],
		EventType:   ua.NewNumericNodeID(0, id.AlarmConditionType),
		SourceNode:  a.space.TagNodeID(device, tag),
		SourceName:  r.Source,
		Time:        r.Time,
		ReceiveTime: r.Time,
		Message:     ua.NewLocalizedText(r.Message),
		Severity:    uint16(r.Severity),
		ConditionID: ua.NewStringNodeID(a.space.Namespace(), device+"/"+r.Alarm),
	}
	_ = ev.Set(events.Field("ConditionName"), r.Alarm)
	_ = ev.Set(events.Field("ActiveState", "Id"), r.Active)
	_ = ev.Set(events.Field("AckedState", "Id"), r.Acked)
	_ = ev.Set(events.Field("ConfirmedState", "Id"), r.Confirmed)
	_ = ev.Set(events.Field("EnabledState", "Id"), r.Enabled)
	_ = ev.Set(events.Field("Comment"), ua.NewLocalizedText(r.Comment))
	_ = ev.Set(events.Field("ClientUserId"), r.User)
	_ = ev.Set(events.Field("Retain"), r.Active || !r.Acked || !r.Confirmed)
	return ev
}
