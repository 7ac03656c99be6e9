package config

import (
	"errors"
	"testing"
	"time"
)

func TestParseDuration(t *testing.T) {
	tests := []struct {
		in   string
		want time.Duration
		ok   bool
	}{
		// .NET TimeSpan
		{"00:00:10", 10 * time.Second, true},
		{"00:10", 10 * time.Minute, true},
		{"01:02:03", time.Hour + 2*time.Minute + 3*time.Second, true},
		{"1.02:03:04", 24*time.Hour + 2*time.Hour + 3*time.Minute + 4*time.Second, true},
		{"1:02:03:04", 24*time.Hour + 2*time.Hour + 3*time.Minute + 4*time.Second, true},
		{"00:00:00.250", 250 * time.Millisecond, true},
		{"00:00:00.5", 500 * time.Millisecond, true},
		{"00:00:00.0000001", 100 * time.Nanosecond, true},
		{"0:0:1", time.Second, true},
		{"-00:00:01", -time.Second, true},
		{" 00:00:15 ", 15 * time.Second, true},
		{"00:00:00", 0, true},
		{"106751.23:47:16", 106751*24*time.Hour + 23*time.Hour + 47*time.Minute + 16*time.Second, true},
		// Go
		{"10s", 10 * time.Second, true},
		{"250ms", 250 * time.Millisecond, true},
		{"1h30m", 90 * time.Minute, true},
		{"-5s", -5 * time.Second, true},
		{"0", 0, true},
		// rejected
		{"", 0, false},
		{"10", 0, false},
		{"1.5", 0, false},
		{"00:60", 0, false},
		{"24:00:00", 0, false},
		{"00:00:60", 0, false},
		{"00:00:00.12345678", 0, false},
		{"00:00:00.", 0, false},
		{"00:00:00.1a", 0, false},
		{"1.2.3:00:00", 0, false},
		{"00:00:00:00:00", 0, false},
		{"a:b:c", 0, false},
		{"00::10", 0, false},
		{"106752.00:00:00", 0, false},
		{"106751.23:47:17", 0, false},
		{"10 s", 0, false},
		{"ten seconds", 0, false},
		{"--00:00:01", 0, false},
	}
	for _, tc := range tests {
		got, err := ParseDuration(tc.in)
		if tc.ok && (err != nil || got != tc.want) {
			t.Errorf("ParseDuration(%q) = %v, %v; want %v", tc.in, got, err, tc.want)
		}
		if !tc.ok {
			if err == nil {
				t.Errorf("ParseDuration(%q) = %v, want an error", tc.in, got)
			} else if !errors.Is(err, errDuration) {
				t.Errorf("ParseDuration(%q) error %v does not wrap errDuration", tc.in, err)
			}
		}
	}
}
