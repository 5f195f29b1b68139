package redact

import (
	"context"
	"fmt"
	"log/slog"
)

// Handler returns a slog.Handler that passes every record to h with its
// message and attribute values redacted by r: strings, errors, Stringers,
// byte slices, and any other value whose printed form holds a secret
// (which is then logged as that redacted text). Log lines carry upstream
// text (failure reasons, addresses, bodies cut short), and a log file is
// read by more people than the answers it records.
func Handler(h slog.Handler, r *Redactor) slog.Handler {
	return &handler{h: h, r: r}
}

type handler struct {
	h slog.Handler
	r *Redactor
}

func (h *handler) Enabled(ctx context.Context, l slog.Level) bool { return h.h.Enabled(ctx, l) }

func (h *handler) Handle(ctx context.Context, rec slog.Record) error {
	out := slog.NewRecord(rec.Time, rec.Level, h.r.String(rec.Message), rec.PC)
	rec.Attrs(func(a slog.Attr) bool {
		out.AddAttrs(h.attr(a))
		return true
	})
	return h.h.Handle(ctx, out)
}

func (h *handler) WithAttrs(as []slog.Attr) slog.Handler {
	red := make([]slog.Attr, len(as))
	for i, a := range as {
		red[i] = h.attr(a)
	}
	return &handler{h: h.h.WithAttrs(red), r: h.r}
}

func (h *handler) WithGroup(name string) slog.Handler {
	return &handler{h: h.h.WithGroup(name), r: h.r}
}

// attr redacts one attribute's value; numbers, times and the like are
// left as they are, since they cannot spell a secret.
func (h *handler) attr(a slog.Attr) slog.Attr {
	v := a.Value.Resolve()
	switch v.Kind() {
	case slog.KindString:
		return slog.String(a.Key, h.r.String(v.String()))
	case slog.KindGroup:
		as := v.Group()
		red := make([]any, len(as))
		for i, g := range as {
			red[i] = h.attr(g)
		}
		return slog.Group(a.Key, red...)
	case slog.KindAny:
		var s string
		switch x := v.Any().(type) {
		case error:
			s = x.Error()
		case fmt.Stringer:
			s = x.String()
		case []byte:
			s = string(x)
		default:
			s = fmt.Sprint(x)
			if t := h.r.String(s); t != s {
				return slog.String(a.Key, t)
			}
			return slog.Attr{Key: a.Key, Value: v}
		}
		return slog.String(a.Key, h.r.String(s))
	}
	return slog.Attr{Key: a.Key, Value: v}
}
