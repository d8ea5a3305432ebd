package sipleg

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/require"

	"switchboard/call"
	"switchboard/sip"
)

// TestDialError: the SIP outcome of a dial that did not end in an answer
// becomes the call's: busy, no answer, canceled or failed, with its
// status and who ended it.
func TestDialError(t *testing.T) {
	for _, tc := range []struct {
		err      error
		progress string
		status   int
		byCallee bool
	}{
		{&sip.DialError{Status: 486, Reason: "Busy Here"}, call.ProgressBusy, 486, true},
		{&sip.DialError{Status: 603, Reason: "Decline"}, call.ProgressBusy, 603, true},
		{&sip.DialError{Status: 480, Reason: "Temporarily Unavailable"}, call.ProgressNoAnswer, 480, true},
		{&sip.DialError{Status: 487, Reason: "Request Terminated", Err: sip.ErrRingTimeout}, call.ProgressNoAnswer, 487, false},
		{&sip.DialError{Status: 487, Reason: "Request Terminated", Err: sip.ErrLocalHangup}, call.ProgressCanceled, 487, false},
		{&sip.DialError{Status: 404, Reason: "Not Found"}, call.ProgressFailed, 404, true},
		{&sip.DialError{Err: errors.New("invite: transaction timed out")}, call.ProgressFailed, 0, false},
		{errors.New("no route"), call.ProgressFailed, 0, false},
	} {
		var de *call.DialError
		require.ErrorAs(t, dialError(tc.err), &de)
		require.Equal(t, tc.progress, de.Progress, "%v", tc.err)
		require.Equal(t, tc.status, de.SIPStatus, "%v", tc.err)
		require.Equal(t, tc.byCallee, de.ByCallee, "%v", tc.err)
		require.ErrorIs(t, de, tc.err)
	}
}

// TestOpusOptions: an Opus peer's fmtp limits the encoder (RFC 7587
// section 6.1); other codecs have nothing to tune.
func TestOpusOptions(t *testing.T) {
	c := sip.Opus
	c.Params = "maxaveragebitrate=20000;maxplaybackrate=16000;useinbandfec=1"
	o := opusOptions(c)
	require.Equal(t, 20000, o.Bitrate)
	require.Equal(t, 16000, o.MaxPlaybackRate)
	require.Zero(t, opusOptions(sip.PCMU))
}
