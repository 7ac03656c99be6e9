package config

import (
	"errors"
	"fmt"
	"math"
	"strings"
	"time"
)

// DurationFormat describes the accepted duration forms.
const DurationFormat = "a TimeSpan such as 00:00:10, 1.02:03:04 or 00:00:00.250, or a Go duration such as 10s or 250ms"

// errDuration is wrapped by every ParseDuration error.
var errDuration = errors.New("not a duration")

// ParseDuration parses a .NET TimeSpan or a Go duration.
//
// TimeSpan forms, each with an optional leading '-':
//
//	hh:mm              00:10          (10 minutes)
//	hh:mm:ss           00:00:10
//	hh:mm:ss.fffffff   00:00:00.250   (1 to 7 fraction digits)
//	d.hh:mm:ss[.f]     1.02:03:04
//	d:hh:mm:ss[.f]     1:02:03:04
//
// Hours are 0..23, minutes and seconds 0..59, as .NET requires. Go forms are
// anything time.ParseDuration accepts ("10s", "250ms", "1h30m"). A bare
// number is rejected except "0": .NET reads "10" as ten days, which is never
// what an engineer typing "10" for a timeout means.
func ParseDuration(s string) (time.Duration, error) {
	t := strings.TrimSpace(s)
	switch {
	case t == "":
		return 0, fmt.Errorf("empty duration: %w", errDuration)
	case strings.Contains(t, ":"):
		return parseTimeSpan(t)
	case t == "0":
		return 0, nil
	case strings.IndexFunc(t, isLetter) >= 0:
		d, err := time.ParseDuration(t)
		if err != nil {
			return 0, fmt.Errorf("%q: %w", s, errDuration)
		}
		return d, nil
	default:
		return 0, fmt.Errorf("%q has no unit: %w", s, errDuration)
	}
}

func isLetter(r rune) bool { return r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r == 'µ' }

// maxDays keeps every TimeSpan inside time.Duration's range.
const maxDays = math.MaxInt64 / int64(24*time.Hour)

func parseTimeSpan(t string) (time.Duration, error) {
	bad := func(why string) (time.Duration, error) {
		return 0, fmt.Errorf("TimeSpan %q: %s: %w", t, why, errDuration)
	}
	neg := strings.HasPrefix(t, "-")
	body := strings.TrimPrefix(t, "-")
	parts := strings.Split(body, ":")
	days := "0"
	switch len(parts) {
	case 4:
		days, parts = parts[0], parts[1:]
	case 2, 3:
		if d, h, ok := strings.Cut(parts[0], "."); ok {
			days, parts[0] = d, h
		}
	default:
		return bad("expected hh:mm, hh:mm:ss or d.hh:mm:ss")
	}
	d, ok := digits(days, 1, 8)
	if !ok || d > maxDays {
		return bad("days must be a number up to " + fmt.Sprint(maxDays))
	}
	h, ok := digits(parts[0], 1, 2)
	if !ok || h > 23 {
		return bad("hours must be 0..23")
	}
	m, ok := digits(parts[1], 1, 2)
	if !ok || m > 59 {
		return bad("minutes must be 0..59")
	}
	var sec, nanos int64
	if len(parts) == 3 {
		whole, frac, hasFrac := strings.Cut(parts[2], ".")
		if sec, ok = digits(whole, 1, 2); !ok || sec > 59 {
			return bad("seconds must be 0..59")
		}
		if hasFrac {
			f, ok := digits(frac, 1, 7)
			if !ok {
				return bad("fraction must be 1 to 7 digits")
			}
			for i := len(frac); i < 9; i++ {
				f *= 10
			}
			nanos = f
		}
	}
	rest := (h*3600+m*60+sec)*int64(time.Second) + nanos
	if d == maxDays && rest > math.MaxInt64-d*int64(24*time.Hour) {
		return bad("out of range")
	}
	total := time.Duration(d*int64(24*time.Hour) + rest)
	if neg {
		total = -total
	}
	return total, nil
}

// digits parses a decimal number of minLen..maxLen ASCII digits.
func digits(s string, minLen, maxLen int) (int64, bool) {
	if len(s) < minLen || len(s) > maxLen {
		return 0, false
	}
	var n int64
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int64(c-'0')
	}
	return n, true
}
