package sip

import (
	"context"
	"errors"
	"log/slog"

	"github.com/emiago/sipgo/sip"
	"github.com/rs/zerolog"
)

// slogHandler forwards sipgo's log/slog records to a zerolog logger so
// that the whole process writes one log stream.
type slogHandler struct {
	log    zerolog.Logger
	attrs  []slog.Attr
	groups string
}

// newSlogLogger bridges sipgo's log into l, sampled (a flood of bad
// messages would otherwise write a line each) and without the raw bytes
// of the messages sipgo could not parse (see addAttr).
func newSlogLogger(l zerolog.Logger) *slog.Logger {
	return slog.New(&slogHandler{log: l.With().Str("component", "sipgo").Logger().Sample(floodSampler())})
}

func (h *slogHandler) Enabled(_ context.Context, lvl slog.Level) bool {
	return h.log.GetLevel() <= zerologLevel(lvl)
}

func zerologLevel(l slog.Level) zerolog.Level {
	switch {
	case l >= slog.LevelError:
		return zerolog.ErrorLevel
	case l >= slog.LevelWarn:
		return zerolog.WarnLevel
	case l >= slog.LevelInfo:
		// sipgo logs routine transaction noise at Info; keep it at debug.
		return zerolog.DebugLevel
	default:
		return zerolog.TraceLevel
	}
}

func (h *slogHandler) Handle(_ context.Context, r slog.Record) error {
	lvl := zerologLevel(r.Level)
	if harmless(r) {
		lvl = zerolog.DebugLevel
	}
	ev := h.log.WithLevel(lvl)
	if ev == nil {
		return nil
	}
	for _, a := range h.attrs {
		ev = addAttr(ev, h.groups, a)
	}
	r.Attrs(func(a slog.Attr) bool {
		ev = addAttr(ev, h.groups, a)
		return true
	})
	ev.Msg(r.Message)
	return nil
}

// harmless reports a record sipgo logs as an error that is not one: its
// timer for 100 Trying fired as the transaction ended (the final answer
// went first, as for every INVITE a loaded appliance answers in about
// 200 ms, a flood's included).
func harmless(r slog.Record) bool {
	if r.Message != "send '100 Trying' response failed" {
		return false
	}
	terminated := false
	r.Attrs(func(a slog.Attr) bool {
		if err, ok := a.Value.Resolve().Any().(error); ok && errors.Is(err, sip.ErrTransactionTerminated) {
			terminated = true
		}
		return !terminated
	})
	return terminated
}

func addAttr(ev *zerolog.Event, prefix string, a slog.Attr) *zerolog.Event {
	a.Value = a.Value.Resolve()
	if a.Equal(slog.Attr{}) {
		return ev
	}
	key := prefix + a.Key
	if a.Key == "data" {
		// sipgo attaches the whole message it failed to parse: a flood
		// of junk would be copied to the log byte for byte. Its size is
		// enough.
		return ev.Int(key+"_bytes", len(a.Value.String()))
	}
	switch a.Value.Kind() {
	case slog.KindGroup:
		for _, g := range a.Value.Group() {
			ev = addAttr(ev, key+".", g)
		}
		return ev
	case slog.KindAny:
		if err, ok := a.Value.Any().(error); ok {
			return ev.AnErr(key, err)
		}
		return ev.Interface(key, a.Value.Any())
	default:
		return ev.Str(key, a.Value.String())
	}
}

func (h *slogHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	n := *h
	n.attrs = append(append([]slog.Attr(nil), h.attrs...), attrs...)
	return &n
}

func (h *slogHandler) WithGroup(name string) slog.Handler {
	if name == "" {
		return h
	}
	n := *h
	n.groups = h.groups + name + "."
	return &n
}

// SetLibraryLogger routes the log lines sipgo writes through its
// process-wide default logger (connection pools, parsers) into l. Call it
// once from main; servers and softphones already pass their own logger to
// the layers that accept one.
func SetLibraryLogger(l zerolog.Logger) {
	sip.SetDefaultLogger(newSlogLogger(l))
}
