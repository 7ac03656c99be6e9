package host

import (
	"context"
	"crypto/sha256"
	"strings"
	"time"

	"github.com/gopcua/opcua/id"
	"github.com/gopcua/opcua/ua"

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
	limit := int(min(max, 10_000))
	var out []events.Event
	for len(out) < limit {
		rows, err := a.h.ReadEvents(ctx, a.clusterID, from, to, limit, newestFirst)
		if err != nil {
			return nil, err
		}
		for _, r := range rows {
			if device != "" && !strings.HasPrefix(r.Source, device+"/") {
				continue
			}
			out = append(out, a.event(r))
			if len(out) == limit {
				break
			}
		}
		if device == "" || len(rows) < limit {
			break
		}
		// A device folder skips the other devices' rows: read on after the
		// last row seen.
		last := rows[len(rows)-1].Time
		if newestFirst {
			to = last
		} else {
			from = last.Add(time.Nanosecond)
		}
	}
	return out, nil
}

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
