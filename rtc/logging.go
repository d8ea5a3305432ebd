package rtc

import (
	"fmt"

	"github.com/pion/logging"
	"github.com/rs/zerolog"
)

// pionLogs routes pion's logs into the appliance's zerolog output, one
// level down (pion logs expected conditions, a peer gone, as errors):
// its errors are warnings, its warnings information, the rest debug.
type pionLogs struct{ log zerolog.Logger }

var _ logging.LoggerFactory = pionLogs{}

// NewLogger returns the logger of one pion component.
func (f pionLogs) NewLogger(scope string) logging.LeveledLogger {
	return pionLogger{f.log.With().Str("pion", scope).Logger()}
}

type pionLogger struct{ log zerolog.Logger }

func (l pionLogger) Trace(string)          {}
func (l pionLogger) Tracef(string, ...any) {}
func (l pionLogger) Debug(msg string)      { l.log.Debug().Msg(msg) }
func (l pionLogger) Debugf(format string, args ...any) {
	l.log.Debug().Msg(fmt.Sprintf(format, args...))
}
func (l pionLogger) Info(msg string) { l.log.Debug().Msg(msg) }
func (l pionLogger) Infof(format string, args ...any) {
	l.log.Debug().Msg(fmt.Sprintf(format, args...))
}
func (l pionLogger) Warn(msg string)                  { l.log.Info().Msg(msg) }
func (l pionLogger) Warnf(format string, args ...any) { l.log.Info().Msg(fmt.Sprintf(format, args...)) }
func (l pionLogger) Error(msg string)                 { l.log.Warn().Msg(msg) }
func (l pionLogger) Errorf(format string, args ...any) {
	l.log.Warn().Msg(fmt.Sprintf(format, args...))
}
