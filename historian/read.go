package historian

import (
	"context"
	"fmt"
	"time"
)

// ReadEvents returns up to max (1 … 10,000) historized transitions of
// clusterID between from and to (from before to): oldest first those with
// from ≤ Time < to, or with newestFirst those with from < Time ≤ to, newest
// first — OPC UA HistoryRead's time domain read forwards or backwards
// (Part 11 §6.5.2; a domain of one instant t is t to t + 1 µs, oldest
// first). Transitions of equal Time come in the same order at every call.
// A zero from or to leaves that end open. It reads alarm_history in the
// Config DB, on any node, Primary or not; transitions still queued are not
// in it.
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
