package deployment

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/otopcua/otopcua/config"
)

// Duration is a time.Duration written as "00:00:00.100" (.NET TimeSpan)
// or "100ms" (Go) in the document; config.ParseDuration reads both. Zero
// means "absent": the field's default applies.
type Duration time.Duration

// Std returns d as a time.Duration.
func (d Duration) Std() time.Duration { return time.Duration(d) }

// String is the Go form, e.g. "100ms".
func (d Duration) String() string { return time.Duration(d).String() }

// MarshalJSON writes the Go form, which ParseDuration reads back exactly.
func (d Duration) MarshalJSON() ([]byte, error) {
	return json.Marshal(time.Duration(d).String())
}

// UnmarshalJSON reads a JSON string in either form. Decode does not use it
// (it reports a bad duration with its path); it serves callers that embed a
// Duration in their own JSON.
func (d *Duration) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return fmt.Errorf("deployment: duration %s: accepted values are %s", b, config.DurationFormat)
	}
	v, err := config.ParseDuration(s)
	if err != nil {
		return fmt.Errorf("deployment: duration: %w", err)
	}
	*d = Duration(v)
	return nil
}
