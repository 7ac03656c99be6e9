package historian

import (
	"context"
	"fmt"
	"time"
)

// ReadEvents returns up to max (1 … 10,000) historized transitions of
// clusterID whose time is in [from, to), oldest first or, with
// newestFirst, newest first; a zero from or to leaves that end open. It
// reads alarm_history in the Config DB (for OPC UA HistoryRead of events),
// on any node, Primary or not. Transitions still queued are not in it.
func (h *Historian) ReadEvents(ctx context.Context, clusterID string, from, to time.Time, max int, newestFirst bool) ([]Event, error) {
	rows, err := h.opts.Central.AlarmHistory(ctx, clusterID, from, to, max, newestFirst)
	if err != nil {
		return nil, fmt.Errorf("historian: read events: %w", err)
	}
	out := make([]Event, len(rows))
	for i, r := range rows {
		out[i] = eventOf(r)
	}
	return out, nil
}
