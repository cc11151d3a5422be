package redact

import (
	"context"
	"fmt"
	"log/slog"
)

// Handler returns a slog handler that passes every record's message and
// attributes through r before next: a secret, or a piece of one, that
// slipped into a driver error does not reach the log.
func Handler(next slog.Handler, r *Redactor) slog.Handler {
	return &handler{next: next, red: r}
}

type handler struct {
	next slog.Handler
	red  *Redactor
}

func (h *handler) Enabled(ctx context.Context, l slog.Level) bool {
	return h.next.Enabled(ctx, l)
}

func (h *handler) Handle(ctx context.Context, r slog.Record) error {
	out := slog.NewRecord(r.Time, r.Level, h.red.String(r.Message), r.PC)
	r.Attrs(func(a slog.Attr) bool {
		out.AddAttrs(h.attr(a))
		return true
	})
	return h.next.Handle(ctx, out)
}

func (h *handler) WithAttrs(attrs []slog.Attr) slog.Handler {
	clean := make([]slog.Attr, len(attrs))
	for i, a := range attrs {
		clean[i] = h.attr(a)
	}
	return &handler{next: h.next.WithAttrs(clean), red: h.red}
}

func (h *handler) WithGroup(name string) slog.Handler {
	return &handler{next: h.next.WithGroup(name), red: h.red}
}

func (h *handler) attr(a slog.Attr) slog.Attr {
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
