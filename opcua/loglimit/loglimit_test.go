package loglimit

import (
	"bytes"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"
)

var t0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

func TestAllow(t *testing.T) {
	type step struct {
		key        string
		at         time.Duration
		ok         bool
		suppressed int
	}
	for _, tc := range []struct {
		name  string
		steps []step
	}{
		{"first line of a key is written", []step{{"a", 0, true, 0}}},
		{"repeats within the interval are suppressed", []step{
			{"a", 0, true, 0}, {"a", time.Second, false, 0}, {"a", 59 * time.Second, false, 0},
		}},
		{"the line after the interval carries the count", []step{
			{"a", 0, true, 0}, {"a", time.Second, false, 0}, {"a", 2 * time.Second, false, 0},
			{"a", time.Minute, true, 2}, {"a", time.Minute + time.Second, false, 0}, {"a", 2 * time.Minute, true, 1},
		}},
		{"keys are independent", []step{
			{"a", 0, true, 0}, {"b", time.Second, true, 0}, {"a", 2 * time.Second, false, 0}, {"b", 3 * time.Second, false, 0},
		}},
		{"a quiet key is written at once with nothing suppressed", []step{
			{"a", 0, true, 0}, {"a", time.Hour, true, 0},
		}},
		{"a clock going back suppresses, never writes twice", []step{
			{"a", time.Minute, true, 0}, {"a", 0, false, 0},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l := New(time.Minute, 10)
			for i, s := range tc.steps {
				ok, n := l.Allow(s.key, t0.Add(s.at))
				if ok != s.ok || n != s.suppressed {
					t.Fatalf("step %d (%s at %s): got %v, %d; want %v, %d", i, s.key, s.at, ok, n, s.ok, s.suppressed)
				}
			}
		})
	}
}

// TestKeysAreBounded: beyond MaxKeys new keys share one overflow key, so
// a flood of distinct keys writes one line per interval; keys that went
// quiet are forgotten to make room.
func TestKeysAreBounded(t *testing.T) {
	l := New(time.Minute, 3)
	written := 0
	for i := range 1000 {
		if ok, _ := l.Allow(fmt.Sprint("addr-", i), t0.Add(time.Duration(i)*time.Millisecond)); ok {
			written++
		}
	}
	if written != 4 { // three keys and the overflow's first line
		t.Fatalf("%d lines for 1000 keys with room for 3, want 4", written)
	}
	if l.Len() != 4 {
		t.Fatalf("%d keys remembered, want 3 and the overflow", l.Len())
	}
	// A minute later the keys that suppressed nothing are forgotten.
	if ok, _ := l.Allow("new", t0.Add(2*time.Minute)); !ok {
		t.Fatal("a new key after the quiet keys expired was not written")
	}
	if l.Len() > 3 {
		t.Fatalf("%d keys remembered after the sweep, want at most 3", l.Len())
	}
}

// TestLogAddsTheCount: the written line names how many were suppressed.
func TestLogAddsTheCount(t *testing.T) {
	var buf bytes.Buffer
	log := slog.New(slog.NewJSONHandler(&buf, nil))
	l := New(time.Minute, 10)
	for i := range 10 {
		l.Log(log, slog.LevelInfo, "k", t0.Add(time.Duration(i)*time.Second), "refused", "n", i)
	}
	l.Log(log, slog.LevelInfo, "k", t0.Add(time.Minute), "refused", "n", 10)
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	if len(lines) != 2 {
		t.Fatalf("%d lines, want 2:\n%s", len(lines), buf.String())
	}
	if !strings.Contains(lines[1], `"suppressed":9`) || strings.Contains(lines[0], "suppressed") {
		t.Fatalf("want the count of 9 on the second line only:\n%s", buf.String())
	}
}
