package api

import (
	"bufio"
	"errors"
	"net"
	"net/http"
	"sync"
	"time"

	"switchboard/api/httpx"
)

func asHTTPError(err error, target **httpx.Error) bool { return errors.As(err, target) }

type statusWriter struct {
	http.ResponseWriter
	status int
}

func (w *statusWriter) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	return w.ResponseWriter.Write(b)
}

// Unwrap lets http.ResponseController reach the connection (flushes).
func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// Hijack hands the connection to a WebSocket upgrader; the request is
// logged with status 101.
func (w *statusWriter) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	h, ok := w.ResponseWriter.(http.Hijacker)
	if !ok {
		return nil, nil, errors.New("the connection cannot be hijacked")
	}
	if w.status == 0 {
		w.status = http.StatusSwitchingProtocols
	}
	return h.Hijack()
}

// logRequests logs each request once, at the boundary, and turns a panic in
// a handler into a 500 instead of a dead connection.
func (s *Server) logRequests(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		sw := &statusWriter{ResponseWriter: w}
		l := s.log.With().Str("method", r.Method).Str("path", r.URL.Path).Logger()
		r = r.WithContext(l.WithContext(r.Context()))
		defer func() {
			if v := recover(); v != nil {
				if v == http.ErrAbortHandler {
					panic(v)
				}
				l.Error().Interface("panic", v).Msg("handler panicked")
				if sw.status == 0 {
					httpx.WriteError(sw, errors.New("panic"))
				}
			}
			refused := -1
			if sw.status == http.StatusTooManyRequests {
				// A key over its rate is refused cheaply; a line per
				// refusal would make a flood cost the disk and the CPU
				// it was refused to spare.
				n, ok := s.limited.sample(start)
				if !ok {
					return
				}
				refused = n
			}
			ev := l.Info()
			if r.URL.Path == "/healthz" || r.URL.Path == "/readyz" || r.URL.Path == "/metrics" {
				ev = l.Debug()
			}
			if refused >= 0 {
				ev = ev.Int("refused_unlogged", refused)
			}
			if p := httpx.PrincipalFrom(r.Context()); p != nil {
				ev = ev.Str("key_id", p.KeyID)
			}
			ev.Int("status", sw.status).Dur("duration", time.Since(start)).Msg("http request")
		}()
		next.ServeHTTP(sw, r)
	})
}

// logSampler lets one log line a second through and counts the others.
type logSampler struct {
	mu      sync.Mutex
	last    time.Time
	skipped int
}

// sample reports whether the event at now is logged and, when it is, how
// many events were skipped since the last logged one.
func (l *logSampler) sample(now time.Time) (int, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if now.Sub(l.last) < time.Second {
		l.skipped++
		return 0, false
	}
	n := l.skipped
	l.last, l.skipped = now, 0
	return n, true
}
