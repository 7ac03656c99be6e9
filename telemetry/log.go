package telemetry

import (
	"fmt"
	"io"
	"log/slog"
	"strings"
)

// ParseLevel maps "debug", "info", "warn" and "error" (any case; .NET's
// "information" and "warning" too) to a slog.Level.
func ParseLevel(s string) (slog.Level, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "debug":
		return slog.LevelDebug, nil
	case "info", "information", "":
		return slog.LevelInfo, nil
	case "warn", "warning":
		return slog.LevelWarn, nil
	case "error":
		return slog.LevelError, nil
	}
	return slog.LevelInfo, fmt.Errorf("telemetry: unknown log level %q: accepted values are debug, info, warn, error", s)
}

// NewLogger returns a logger writing to w at the given level ("debug",
// "info", "warn", "error") in the given format: "json" (one JSON object per
// line, the default) or "text" (logfmt). An unknown level means info and an
// unknown format means json; config.Load has already rejected both.
func NewLogger(w io.Writer, level, format string) *slog.Logger {
	lvl, _ := ParseLevel(level)
	opts := &slog.HandlerOptions{Level: lvl}
	if strings.EqualFold(strings.TrimSpace(format), "text") {
		return slog.New(slog.NewTextHandler(w, opts))
	}
	return slog.New(slog.NewJSONHandler(w, opts))
}
