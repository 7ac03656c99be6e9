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
	newestFirst := end.Before(start)
	from, to := start, end
	if newestFirst {
		from, to = end, start
	}
	if from.Equal(uaserver.MinTime) {
		from = time.Time{}
	}
	if to.Equal(uaserver.MaxTime) {
		to = time.Time{}
	}
	if start.Equal(end) { // one instant
		to = from.Add(time.Microsecond)
	}
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
		rows, err := a.h.ReadEvents(ctx, a.clusterID, from, to, page, newestFirst)
		if err != nil {
			return nil, err
		}
		fresh := 0
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
				return out, nil
			}
		}
		if device == "" || len(rows) < page {
			return out, nil
		}
		if fresh == 0 {
			if page == configdb.MaxAlarmHistoryBatch {
				return out, nil // more than the largest page at one instant
			}
			page = min(2*page, configdb.MaxAlarmHistoryBatch)
			continue
		}
		last := rows[len(rows)-1].Time
		atLast := map[string]bool{}
		if (newestFirst && to.Equal(last)) || (!newestFirst && from.Equal(last)) {
			atLast = seen // a page all at the cursor's instant: keep what was seen there
		}
		for _, r := range rows {
			if r.Time.Equal(last) {
				atLast[historyKey(r)] = true
			}
		}
		seen = atLast
		if newestFirst {
			to = last
		} else {
			from = last
		}
	}
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
