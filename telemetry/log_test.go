package telemetry

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"strings"
	"testing"
)

func TestNewLoggerJSONByDefault(t *testing.T) {
	var buf bytes.Buffer
	log := NewLogger(&buf, "info", "")
	log.Debug("hidden")
	log.Info("joined", "node", "node-a:4053")
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	if len(lines) != 1 {
		t.Fatalf("got %d lines, want 1 (debug filtered): %q", len(lines), buf.String())
	}
	var rec map[string]any
	if err := json.Unmarshal([]byte(lines[0]), &rec); err != nil {
		t.Fatalf("not JSON: %v", err)
	}
	if rec["msg"] != "joined" || rec["node"] != "node-a:4053" || rec["level"] != "INFO" {
		t.Fatalf("record %v", rec)
	}
}

func TestNewLoggerTextAndLevels(t *testing.T) {
	var buf bytes.Buffer
	log := NewLogger(&buf, "warn", "text")
	log.Info("hidden")
	log.Warn("seed unreachable", "seed", "b:4053")
	out := buf.String()
	if strings.Contains(out, "hidden") || !strings.Contains(out, `level=WARN msg="seed unreachable" seed=b:4053`) {
		t.Fatalf("text output %q", out)
	}
}

func TestParseLevel(t *testing.T) {
	for in, want := range map[string]slog.Level{
		"debug": slog.LevelDebug, "INFO": slog.LevelInfo, "information": slog.LevelInfo,
		"warn": slog.LevelWarn, "Warning": slog.LevelWarn, "error": slog.LevelError,
	} {
		if got, err := ParseLevel(in); err != nil || got != want {
			t.Errorf("ParseLevel(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	if _, err := ParseLevel("verbose"); err == nil || !strings.Contains(err.Error(), "debug, info, warn, error") {
		t.Errorf("ParseLevel(verbose) error = %v", err)
	}
}
