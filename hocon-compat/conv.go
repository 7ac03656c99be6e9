package hoconcompat

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// errValue is wrapped by the conversion errors below.
var errValue = errors.New("wrong value")

// durationUnits maps HOCON's duration unit names to their length.
var durationUnits = func() map[string]time.Duration {
	m := map[string]time.Duration{}
	add := func(d time.Duration, names ...string) {
		for _, n := range names {
			m[n] = d
		}
	}
	add(time.Nanosecond, "ns", "nano", "nanos", "nanosecond", "nanoseconds")
	add(time.Microsecond, "us", "µs", "micro", "micros", "microsecond", "microseconds")
	add(time.Millisecond, "ms", "milli", "millis", "millisecond", "milliseconds")
	add(time.Second, "s", "second", "seconds")
	add(time.Minute, "m", "minute", "minutes")
	add(time.Hour, "h", "hour", "hours")
	add(24*time.Hour, "d", "day", "days")
	return m
}()

// DurationForms describes the accepted duration forms for messages.
const DurationForms = "durations such as 15s, 15 s, 20000ms, 1.5s or 1m (a bare number is milliseconds)"

// ParseDuration reads a HOCON duration: a number, optional whitespace and a
// unit (ns, us, ms, s, m, h, d and their long forms: "15 seconds"); a bare
// number is milliseconds. Negative durations are refused.
func ParseDuration(s string) (time.Duration, error) {
	t := strings.TrimSpace(s)
	i := strings.IndexFunc(t, func(r rune) bool { return (r < '0' || r > '9') && r != '.' })
	num, unit := t, ""
	if i >= 0 {
		num, unit = t[:i], strings.TrimSpace(t[i:])
	}
	if num == "" {
		return 0, fmt.Errorf("%q: %w: expected %s", s, errValue, DurationForms)
	}
	scale := time.Millisecond
	if unit != "" {
		u, ok := durationUnits[unit]
		if !ok {
			return 0, fmt.Errorf("%q: %w: unknown unit %q; expected %s", s, errValue, unit, DurationForms)
		}
		scale = u
	}
	if !strings.Contains(num, ".") {
		n, err := strconv.ParseInt(num, 10, 64)
		if err != nil || n > math.MaxInt64/int64(scale) {
			return 0, fmt.Errorf("%q: %w: out of range", s, errValue)
		}
		return time.Duration(n) * scale, nil
	}
	f, err := strconv.ParseFloat(num, 64)
	if err != nil || strings.Count(num, ".") != 1 || strings.HasSuffix(num, ".") || strings.HasPrefix(num, ".") {
		return 0, fmt.Errorf("%q: %w: expected %s", s, errValue, DurationForms)
	}
	d := f * float64(scale)
	if d >= math.MaxInt64 {
		return 0, fmt.Errorf("%q: %w: out of range", s, errValue)
	}
	return time.Duration(math.Round(d)), nil
}

// FormatDuration renders d in the largest HOCON unit that holds it exactly:
// 15s, 100ms, 2m, 1h, 1500us.
func FormatDuration(d time.Duration) string {
	for _, u := range []struct {
		d    time.Duration
		name string
	}{{24 * time.Hour, "d"}, {time.Hour, "h"}, {time.Minute, "m"}, {time.Second, "s"}, {time.Millisecond, "ms"}, {time.Microsecond, "us"}} {
		if d != 0 && d%u.d == 0 {
			return strconv.FormatInt(int64(d/u.d), 10) + u.name
		}
	}
	if d == 0 {
		return "0s"
	}
	return strconv.FormatInt(int64(d), 10) + "ns"
}

// parseBool reads true/false/on/off/yes/no (any case).
func parseBool(s string) (bool, bool) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "true", "on", "yes":
		return true, true
	case "false", "off", "no":
		return false, true
	}
	return false, false
}

// formatBool renders a boolean as Akka configurations write it.
func formatBool(b bool) string {
	if b {
		return "on"
	}
	return "off"
}

// formatFloat renders a float so that it parses back to the same value,
// always with a decimal point (10.0, not 10).
func formatFloat(f float64) string {
	s := strconv.FormatFloat(f, 'f', -1, 64)
	if !strings.ContainsAny(s, ".nN") {
		s += ".0"
	}
	return s
}
