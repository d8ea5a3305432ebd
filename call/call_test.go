package call

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"switchboard/media"
)

// TestRefusals: a router's or a conversation's error refuses the call
// with the status it carries (or 480 when it carries none), a leg that
// cannot start refuses it with its own status and Retry-After; the call
// record says it was rejected and the conversation is closed.
func TestRefusals(t *testing.T) {
	defer goleak.VerifyNone(t)
	for _, tc := range []struct {
		name     string
		routeErr error
		startErr error
		prepErr  error
		want     []any
	}{
		{"unknown agent", &RejectError{Status: 404, Reason: "Not Found", Err: errors.New("no agent")}, nil, nil, []any{404, "Not Found", time.Duration(0)}},
		{"router failure", errors.New("store down"), nil, nil, []any{500, "Server Internal Error", time.Duration(0)}},
		{"no ports", nil, &RejectError{Status: 503, Reason: "Service Unavailable", RetryAfter: 5 * time.Second}, nil, []any{503, "Service Unavailable", 5 * time.Second}},
		{"engine down", nil, nil, &RejectError{Status: 503, Reason: "Service Unavailable"}, []any{503, "Service Unavailable", time.Duration(0)}},
		{"not ready", nil, nil, errors.New("timeout"), []any{480, "Temporarily Unavailable", time.Duration(0)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			leg := newFakeLeg(media.PCMU, Route{AgentID: "ag_1"})
			leg.startErr = tc.startErr
			conv := &fakeConv{format: media.PCM16(24000), prepareErr: tc.prepErr, run: hangupWith("x")}
			c := runCall(t, leg, conv, tc.routeErr, Options{})
			require.Equal(t, tc.want, leg.rejected)
			s := c.Snapshot()
			require.Equal(t, EndedByRejected, s.EndedBy)
			require.Equal(t, StateEnded, s.State)
			require.Equal(t, 1, leg.closeRuns)
			if tc.routeErr == nil {
				require.Equal(t, 1, conv.closed)
			}
		})
	}
}

// TestLifecycle: ring, start, answer in that order; the conversation's
// hangup reason goes into the BYE and the record; the route names the
// record; the leg is closed once.
func TestLifecycle(t *testing.T) {
	defer goleak.VerifyNone(t)
	leg := newFakeLeg(media.PCMU, Route{NumberID: "pn_1", PhoneNumber: "+14155550100", TeamID: "t1", AgentID: "ag_1"})
	conv := &fakeConv{format: media.PCM16(24000), run: func(_ context.Context, p Phone) error {
		require.Equal(t, StateActive, p.Snapshot().State)
		p.Note(Note{Kind: NoteEvent, Text: "hello"})
		p.Note(Note{Kind: NoteTransfer, Text: "sip:desk@example.com"})
		return Hangup("goodbye")
	}}
	j := &testJournal{}
	c := runCall(t, leg, conv, nil, Options{Journal: j})
	require.EqualValues(t, 2, j.changes.Load(), "the journal hears of the answer and the transfer")
	require.Equal(t, []string{"ring", "start", "answer"}, leg.steps)
	require.Equal(t, "goodbye", leg.hungUp)
	s := c.Snapshot()
	require.Equal(t, EndedByAppliance, s.EndedBy)
	require.Equal(t, "goodbye", s.EndReason)
	require.Equal(t, "agent:ag_1", s.Route)
	require.Equal(t, "pn_1", s.NumberID)
	require.Equal(t, "t1", s.TeamID)
	require.Len(t, s.Notes, 2)
	require.False(t, s.Answered.IsZero())
	require.Equal(t, 1, leg.closeRuns)
	require.Equal(t, 1, conv.closed)
}

// TestCallerHangsUp: the caller's BYE (the leg's context) ends the call
// as the caller's.
func TestCallerHangsUp(t *testing.T) {
	defer goleak.VerifyNone(t)
	leg := newFakeLeg(media.PCMU, Route{AgentID: "ag_1"})
	conv := &fakeConv{format: media.PCM16(24000), run: func(ctx context.Context, _ Phone) error {
		leg.cancel(errors.New("BYE from the caller"))
		<-ctx.Done()
		return nil
	}}
	c := runCall(t, leg, conv, nil, Options{})
	s := c.Snapshot()
	require.Equal(t, EndedByCaller, s.EndedBy)
	require.Equal(t, "BYE from the caller", s.EndReason)
	require.Empty(t, leg.hungUp)
}

// frame is 20 ms of a ramp at 8 kHz.
func frame() []int16 {
	f := make([]int16, 160)
	for i := range f {
		f[i] = int16(i * 100)
	}
	return f
}

// TestAudioPaths: the conversation gets the leg's code words untouched
// when it speaks the leg's G.711 (a relay), G.711 of its own law when it
// speaks the other one, and 24 kHz PCM16 otherwise; its audio reaches the
// leg the same ways back, converted once in the leg's media.
func TestAudioPaths(t *testing.T) {
	defer goleak.VerifyNone(t)
	pcm := frame()
	pcmu := media.PCMU.EncodeFrame(nil, pcm)
	for _, tc := range []struct {
		name   string
		format media.Format
		in     func(got []byte) bool
		out    []byte // what the conversation plays
		sent   []byte // what must leave the leg
	}{
		{"relay", media.FormatPCMU, func(got []byte) bool { return bytes.Contains(got, pcmu) }, pcmu, pcmu},
		{"other law", media.FormatPCMA, func(got []byte) bool { return bytes.Contains(got, media.PCMA.Transcode(nil, media.PCMU, pcmu)) },
			media.PCMA.EncodeFrame(nil, pcm), media.PCMU.Transcode(nil, media.PCMA, media.PCMA.EncodeFrame(nil, pcm))},
		{"pcm16 24k", media.PCM16(24000), func(got []byte) bool { return len(got) >= 960 && len(got)%960 == 0 }, nil, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			leg := newFakeLeg(media.PCMU, Route{AgentID: "ag_1"})
			conv := &fakeConv{format: tc.format}
			conv.run = func(_ context.Context, p Phone) error {
				leg.send(pcmu)
				require.Eventually(t, func() bool { return tc.in(conv.heard()) }, 3*time.Second, 5*time.Millisecond)
				if tc.out != nil {
					p.Play("it", tc.out)
					leg.heard(t, tc.sent)
				} else {
					tone := media.AppendPCM16LE(nil, sine(1000, 24000, 4800))
					p.Play("it", tone)
					require.Eventually(t, func() bool { return leg.wire.pkts >= 10 && p.Pending() == 0 }, 3*time.Second, 5*time.Millisecond)
				}
				return Hangup("done")
			}
			runCall(t, leg, conv, nil, Options{})
		})
	}
}

// sine is n samples of a tone of f Hz at rate.
func sine(f float64, rate, n int) []int16 {
	out := make([]int16, n)
	for i := range out {
		out[i] = int16(8000 * math.Sin(2*math.Pi*f*float64(i)/float64(rate)))
	}
	return out
}

// TestLegFormat: a conversation asking for the leg's own format (the line
// test) gets a G.711 leg's code words as they are, and PCM16 at a
// wideband leg's rate, unresampled; one asking for the leg's G.711 or
// PCM16 at a rate (an echo agent) gets the code words of a G.711 leg and
// PCM16 at its rate from a wideband one. Phone.Format says what it got,
// Info().Rate the rate of the caller's own audio.
func TestLegFormat(t *testing.T) {
	defer goleak.VerifyNone(t)
	for _, tc := range []struct {
		codec   media.Codec
		asked   media.Format
		want    media.Format
		frame   int // bytes of 20 ms the conversation hears (0: the code words)
		legRate int
	}{
		{media.PCMA, LegFormat, media.FormatPCMA, 0, 8000},
		{media.G722, LegFormat, media.PCM16(16000), 640, 16000},
		{media.PCMU, LegG711Or(24000), media.FormatPCMU, 0, 8000},
		{media.PCMA, LegG711Or(24000), media.FormatPCMA, 0, 8000},
		{media.G722, LegG711Or(24000), media.PCM16(24000), 960, 16000},
	} {
		t.Run(fmt.Sprint(tc.codec.Name, tc.asked), func(t *testing.T) {
			coded := tc.codec.EncodeFrame(nil, frame())
			if tc.codec == media.G722 {
				coded = media.PCMA.EncodeFrame(nil, frame()) // 20 ms of G.722 code words
			}
			leg := newFakeLeg(tc.codec, Route{AgentID: "ag_1"})
			conv := &fakeConv{format: tc.asked}
			var got media.Format
			var info LegInfo
			conv.run = func(_ context.Context, p Phone) error {
				got, info = p.Format(), p.Info()
				leg.send(coded)
				if tc.frame == 0 {
					require.Eventually(t, func() bool { return bytes.Contains(conv.heard(), coded) }, 3*time.Second, 5*time.Millisecond)
					p.Play("it", coded)
					leg.heard(t, coded)
				} else {
					require.Eventually(t, func() bool { return len(conv.heard()) >= tc.frame }, 3*time.Second, 5*time.Millisecond)
					require.Zero(t, len(conv.heard())%tc.frame, "frames of 20 ms at the rate asked")
				}
				return Hangup("done")
			}
			runCall(t, leg, conv, nil, Options{})
			require.Equal(t, tc.want, got)
			require.Equal(t, tc.legRate, info.Rate)
		})
	}
}

// TestInbandPrecedence: the number's dtmf_inband wins over the
// conversation's, which wins over the appliance's.
func TestInbandPrecedence(t *testing.T) {
	for _, tc := range []struct {
		appliance, conv, number, want Inband
	}{
		{"", "", "", InbandAuto},
		{InbandOff, "", "", InbandOff},
		{InbandOff, InbandOn, "", InbandOn},
		{InbandOff, InbandOn, InbandAuto, InbandAuto},
	} {
		leg := newFakeLeg(media.PCMU, Route{AgentID: "ag_1", DTMFInband: tc.number})
		conv := &fakeConv{format: media.PCM16(24000), keypad: KeypadSettings{Inband: tc.conv}, run: hangupWith("x")}
		runCall(t, leg, conv, nil, Options{Inband: tc.appliance})
		require.Equal(t, tc.want, leg.opts.Inband, "%+v", tc)
	}
}

// TestKeysReachTheConversation: each key crosses the call once, to the
// conversation (which buffers and flushes them itself), and is in the
// record; under the redact policy the record hides the digit.
func TestKeysReachTheConversation(t *testing.T) {
	defer goleak.VerifyNone(t)
	for _, redact := range []bool{false, true} {
		leg := newFakeLeg(media.PCMU, Route{AgentID: "ag_1"})
		conv := &fakeConv{format: media.PCM16(24000)}
		if redact {
			conv.keypad.Policy.Mode = "redact"
		}
		conv.run = func(context.Context, Phone) error {
			for _, d := range []byte("12#") {
				leg.key(d)
			}
			return Hangup("done")
		}
		c := runCall(t, leg, conv, nil, Options{})
		require.Equal(t, []byte("12#"), conv.keys)
		var digits []string
		for _, n := range c.Snapshot().Notes {
			if n.Kind == NoteDTMF {
				digits = append(digits, n.Text)
			}
		}
		if redact {
			require.Equal(t, []string{"*", "*", "*"}, digits)
		} else {
			require.Equal(t, []string{"1", "2", "#"}, digits)
		}
	}
}
