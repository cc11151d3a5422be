package main

import (
	"context"
	"fmt"
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
	return slog.New(&redactHandler{next: h, red: red})
}

// redactHandler removes secrets from records before passing them on.
type redactHandler struct {
	next slog.Handler
	red  *redact.Redactor
}

func (h *redactHandler) Enabled(ctx context.Context, l slog.Level) bool {
	return h.next.Enabled(ctx, l)
}

func (h *redactHandler) Handle(ctx context.Context, r slog.Record) error {
	out := slog.NewRecord(r.Time, r.Level, h.red.String(r.Message), r.PC)
	r.Attrs(func(a slog.Attr) bool {
		out.AddAttrs(h.attr(a))
		return true
	})
	return h.next.Handle(ctx, out)
}

func (h *redactHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	clean := make([]slog.Attr, len(attrs))
	for i, a := range attrs {
		clean[i] = h.attr(a)
	}
	return &redactHandler{next: h.next.WithAttrs(clean), red: h.red}
}

func (h *redactHandler) WithGroup(name string) slog.Handler {
	return &redactHandler{next: h.next.WithGroup(name), red: h.red}
}

func (h *redactHandler) attr(a slog.Attr) slog.Attr {
	v := a.Value.Resolve()
	switch v.Kind() {
	case slog.KindString:
		return slog.String(a.Key, h.red.String(v.String()))
	case slog.KindGroup:
		group := v.Group()
		clean := make([]any, len(group))
		for i, g := range group {
			clean[i] = h.attr(g)
		}
		return slog.Group(a.Key, clean...)
	case slog.KindAny:
		if err, ok := v.Any().(error); ok {
			return slog.String(a.Key, h.red.String(err.Error()))
		}
		if s, ok := v.Any().(interface{ String() string }); ok {
			return slog.String(a.Key, h.red.String(s.String()))
		}
		// Other values (lists, maps) keep their form unless they show a
		// secret.
		if text := fmt.Sprintf("%+v", v.Any()); h.red.String(text) != text {
			return slog.String(a.Key, h.red.String(text))
		}
	}
	return slog.Attr{Key: a.Key, Value: v}
}
