package drivers

import (
	"time"

	"github.com/gopcua/opcua/ua"
)

// Readings holds the last Reading of every tag of a device and applies the
// status rules of the package comment: a good read sets the value, Good and
// its time; a failure keeps the last value and sets a Bad code, and the
// source time only moves when the status changes, so a device that stays
// down does not make every poll a change.
//
// Readings is a plain value, not safe for concurrent use: a driver keeps it
// under the lock that serializes its Reads.
type Readings struct {
	r   []Reading
	has []bool // has[i]: tag i had a good read once
}

// NewReadings returns the readings of n tags before anything happened:
// no value, BadNoCommunication, zero time.
func NewReadings(n int) *Readings {
	rs := &Readings{r: make([]Reading, n), has: make([]bool, n)}
	for i := range rs.r {
		rs.r[i].Status = ua.StatusBadNoCommunication
	}
	return rs
}

// Len is the number of tags.
func (rs *Readings) Len() int { return len(rs.r) }

// Good records tag i's value v read at t.
func (rs *Readings) Good(i int, v any, t time.Time) {
	rs.r[i] = Reading{Value: v, Status: ua.StatusGood, SourceTime: t}
	rs.has[i] = true
}

// CommFailed records at t that tag i could not be read for lack of
// communication (no connection, a refused, reset or timed-out request, a
// malformed answer, a gateway that cannot reach the device):
// BadCommunicationError when the tag had a value, else BadNoCommunication.
func (rs *Readings) CommFailed(i int, t time.Time) {
	code := ua.StatusBadNoCommunication
	if rs.has[i] {
		code = ua.StatusBadCommunicationError
	}
	rs.Failed(i, code, t)
}

// Failed records at t that tag i was not read, with status code (Bad). The
// last value stays.
func (rs *Readings) Failed(i int, code ua.StatusCode, t time.Time) {
	if rs.r[i].Status == code {
		return
	}
	rs.r[i].Status = code
	rs.r[i].SourceTime = t
}

// Snapshot returns a copy of every tag's reading.
func (rs *Readings) Snapshot() []Reading {
	out := make([]Reading, len(rs.r))
	copy(out, rs.r)
	return out
}

// At returns tag i's reading.
func (rs *Readings) At(i int) Reading { return rs.r[i] }
