package call

import (
	"runtime/debug"
)

// internalErrorReason is the Reason text of a call ended by a panic in its
// own code.
const internalErrorReason = "internal error"

// contain recovers a panic in one of the call's goroutines (the INVITE
// goroutine running the call, the media goroutine's sink calls, the
// helpers the call starts): the panic is logged with its stack and ends
// this call only (refused 500 while ringing, BYE with a Reason once
// answered); every other call goes on. It must be deferred directly.
// async ends the call from another goroutine (for the media goroutine,
// which must not wait on signalling).
func (c *Call) contain(where string, async bool) {
	v := recover()
	if v == nil {
		return
	}
	c.log.Error().Interface("panic", v).Str("where", where).Str("stack", string(debug.Stack())).
		Msg("call code panicked: ending this call")
	c.m.opts.Metrics.panics.Inc()
	end := func() {
		if c.getState() == StateActive {
			c.hangup(internalErrorReason)
			return
		}
		c.reject(500, "Server Internal Error", internalErrorReason, 0)
	}
	if async {
		go end()
		return
	}
	end()
}

// goSafe runs f in a goroutine of the call whose panic ends only the call.
func (c *Call) goSafe(where string, f func()) {
	go func() {
		defer c.contain(where, false)
		f()
	}()
}
