package main

import (
	"io"
	"log/slog"

	"github.com/pgrelay/pgrelay/internal/redact"
)

// newLogger builds the logger of PGRELAY_LOG_FORMAT and PGRELAY_LOG_LEVEL
// (already validated) writing to w. Every message and attribute passes
// through red, so a password, or a piece of one, that slipped into a driver
// error does not reach the log.
func newLogger(w io.Writer, format, level string, red *redact.Redactor) *slog.Logger {
	var lvl slog.Level
	switch level {
	case "debug":
		lvl = slog.LevelDebug
	case "warn":
		lvl = slog.LevelWarn
	case "error":
		lvl = slog.LevelError
	default:
		lvl = slog.LevelInfo
	}
	opts := &slog.HandlerOptions{Level: lvl}
	var h slog.Handler
	if format == "json" {
		h = slog.NewJSONHandler(w, opts)
	} else {
		h = slog.NewTextHandler(w, opts)
	}
	return slog.New(redact.Handler(h, red))
}
