package app

import (
	"io"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/mattn/go-isatty"
	"github.com/rs/zerolog"
)

// timeFormatOnce sets zerolog's one global setting once, so daemons
// started side by side in one process (tests) do not race on it.
var timeFormatOnce sync.Once

// NewLogger builds the process logger: JSON, or a console writer when the
// format is "console" or "auto" on a terminal.
func NewLogger(w io.Writer, level, format string) zerolog.Logger {
	lvl, err := zerolog.ParseLevel(level)
	if err != nil || level == "" {
		lvl = zerolog.InfoLevel
	}
	timeFormatOnce.Do(func() { zerolog.TimeFieldFormat = time.RFC3339Nano })
	out := w
	console := format == "console"
	if format == "auto" {
		if f, ok := w.(*os.File); ok && isatty.IsTerminal(f.Fd()) {
			console = true
		}
	}
	if console {
		out = zerolog.ConsoleWriter{Out: w, TimeFormat: "15:04:05.000"}
	}
	return zerolog.New(out).Level(lvl).With().Timestamp().Logger()
}

// serverLog carries net/http's own messages (TLS handshake failures from
// scanners and plain-HTTP clients, mostly) into the logger at debug level.
type serverLog struct{ l zerolog.Logger }

func (w serverLog) Write(p []byte) (int, error) {
	w.l.Debug().Str("component", "http_server").Msg(strings.TrimSpace(string(p)))
	return len(p), nil
}
