package conversation

import (
	"runtime/debug"

	"github.com/rs/zerolog"

	"switchboard/call"
)

// contain recovers a panic in one of a conversation's goroutines (prompt
// rendering, tools, transcription, transfers, announcements): it is
// logged with its stack and ends this call only, with a BYE saying
// "internal error"; every other call goes on. It must be deferred
// directly.
func contain(log zerolog.Logger, phone call.Phone, where string) {
	v := recover()
	if v == nil {
		return
	}
	log.Error().Interface("panic", v).Str("where", where).Str("stack", string(debug.Stack())).
		Msg("conversation code panicked: ending this call")
	if phone != nil {
		phone.Hangup("internal error")
	}
}
