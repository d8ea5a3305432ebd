package transfer_test

import (
	"context"
	"errors"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"switchboard/api/httpx"
	"switchboard/call"
	"switchboard/sip"
	"switchboard/transfer"
)

// loud reports whether b (µ-law) holds sound: the pacer's silence is
// 0xFF, the hold music and a party's voice are not.
func loud(b []byte) bool {
	n := 0
	for _, c := range b {
		if c != 0xFF && c != 0x7F {
			n++
		}
	}
	return n > len(b)/4
}

// sentSince is what leg sent after the first n bytes.
func sentSince(l *fakeLeg, n int) []byte { return l.wire.bytes()[n:] }

// voicePCM is pcm of a party's voice: a 300 Hz tone.
func voicePCM(secs float64) []int16 {
	out := make([]int16, int(secs*8000))
	for i := range out {
		out[i] = int16(6000 * math.Sin(2*math.Pi*300*float64(i)/8000))
	}
	return out
}

// greetingPCM is an answering machine's long greeting: speech-like
// noise in syllables, never silent for long.
func greetingPCM(secs float64) []int16 {
	rng := rand.New(rand.NewPCG(1, 2))
	out := make([]int16, int(secs*8000))
	for i := range out {
		env := 0.6 + 0.4*math.Sin(2*math.Pi*4*float64(i)/8000)
		out[i] = int16(env * 5000 * (rng.Float64()*2 - 1))
	}
	return out
}

// start prepares and runs a transfer of the call on p in the background;
// the channel gets its result.
func start(t *testing.T, ctx context.Context, s *transfer.Service, p call.Phone, req transfer.Request, rep *reporter) <-chan transfer.Result {
	t.Helper()
	tr, err := s.Prepare(ctx, p, req)
	require.NoError(t, err)
	done := make(chan transfer.Result, 1)
	go func() { done <- tr.Run(ctx, rep) }()
	return done
}

func result(t *testing.T, ch <-chan transfer.Result) transfer.Result {
	t.Helper()
	select {
	case r := <-ch:
		return r
	case <-time.After(10 * time.Second):
		t.Fatal("the transfer did not end")
	}
	return transfer.Result{}
}

// TestBridged: the human answers; the caller and the human hear each
// other, the conversation hears nobody; the human is offered the caller's
// law first; the call's end releases the human's leg.
func TestBridged(t *testing.T) {
	defer goleak.VerifyNone(t)
	caller, human := newFakeLeg("caller"), newFakeLeg("human")
	human.ring = true
	d := &dialer{next: []*fakeLeg{human}}
	s := newService(t, d)
	rep := &reporter{}
	runCall(t, caller, func(ctx context.Context, p call.Phone) error {
		res := result(t, start(t, ctx, s, p, transfer.Request{TargetURI: "sip:human@127.0.0.1", Mode: transfer.ModeBridge}, rep))
		require.Equal(t, transfer.StatusBridged, res.Status)
		require.NotNil(t, res.Human)
		before := len(caller.wire.bytes())
		stop := make(chan struct{})
		go human.talk(voicePCM(1), stop)
		require.Eventually(t, func() bool { return loud(sentSince(caller, before)) }, 3*time.Second, 10*time.Millisecond,
			"the caller does not hear the human")
		close(stop)
		return call.Hangup("done")
	})
	require.Equal(t, []string{"dialing", "ringing", "answered", "bridged"}, rep.statuses())
	require.Equal(t, []string{"PCMU", "PCMA"}, d.opts[0].Codecs)
	require.Equal(t, transfer.DefaultRingTimeout, d.opts[0].RingTimeout)
	hung, closed := human.state()
	require.NotEmpty(t, hung, "the human's leg was hung up at the end of the call")
	require.Equal(t, 1, closed)
}

// TestWarm: the caller holds with music while the human is briefed (the
// conversation hears nothing of the caller); then the human's key, their
// hanging up, their silence or a machine decides.
func TestWarm(t *testing.T) {
	defer goleak.VerifyNone(t)
	bye := func(l *fakeLeg) { l.cancel(sip.ErrRemoteBye) }
	cases := []struct {
		name   string
		accept transfer.Accept
		act    func(h *fakeLeg, stop <-chan struct{})
		want   transfer.Status
	}{
		{"key 1", transfer.AcceptDTMF, func(h *fakeLeg, _ <-chan struct{}) { h.key('1') }, transfer.StatusBridged},
		{"key 2", transfer.AcceptDTMF, func(h *fakeLeg, _ <-chan struct{}) { h.key('2') }, transfer.StatusDeclined},
		{"hangs up", transfer.AcceptDTMF, func(h *fakeLeg, _ <-chan struct{}) { bye(h) }, transfer.StatusDeclined},
		{"leg fails", transfer.AcceptDTMF, func(h *fakeLeg, _ <-chan struct{}) { h.cancel(context.DeadlineExceeded) }, transfer.StatusFailed},
		{"no key", transfer.AcceptDTMF, func(*fakeLeg, <-chan struct{}) {}, transfer.StatusNoAnswer},
		{"on answer", transfer.AcceptAnswer, func(h *fakeLeg, stop <-chan struct{}) { h.talk(greetingPCM(0.4), stop) }, transfer.StatusBridged},
		{"machine", transfer.AcceptAnswer, func(h *fakeLeg, stop <-chan struct{}) { h.talk(greetingPCM(6), stop) }, transfer.StatusVoicemail},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			caller, human := newFakeLeg("caller"), newFakeLeg("human")
			d := &dialer{next: []*fakeLeg{human}}
			s := newService(t, d)
			rep := &reporter{}
			cv := &conv{}
			runCallConv(t, caller, cv, func(ctx context.Context, p call.Phone) error {
				stop := make(chan struct{})
				defer close(stop)
				go caller.talk(voicePCM(8), stop) // the caller talks all along
				before := len(caller.wire.bytes())
				ch := start(t, ctx, s, p, transfer.Request{TargetURI: "sip:human@127.0.0.1", Mode: transfer.ModeWarm,
					Accept: tc.accept, Briefing: "A caller needs help."}, rep)
				require.Eventually(t, func() bool { return strings.Contains(strings.Join(rep.statuses(), ","), "briefing") },
					3*time.Second, 5*time.Millisecond)
				heard := cv.heardFrames()
				require.Eventually(t, func() bool { return loud(human.wire.bytes()) }, 3*time.Second, 10*time.Millisecond,
					"the human hears no briefing")
				require.Eventually(t, func() bool { b := sentSince(caller, before); return len(b) > 1600 && loud(b[800:]) },
					3*time.Second, 10*time.Millisecond, "the caller hears no hold music")
				go tc.act(human, stop)
				res := result(t, ch)
				require.Equal(t, tc.want, res.Status, "reason: %s", res.Reason)
				if res.Status == transfer.StatusBridged {
					require.Equal(t, heard, cv.heardFrames(), "the conversation heard the caller")
					return call.Hangup("done")
				}
				// Back with the conversation: it hears the caller again,
				// and the caller hears it.
				require.Eventually(t, func() bool { return cv.heardFrames() > heard }, 3*time.Second, 10*time.Millisecond)
				require.Eventually(t, func() bool { _, closed := human.state(); return closed == 1 }, 3*time.Second, 10*time.Millisecond,
					"the human's leg is released at once")
				return call.Hangup("done")
			})
			st := rep.statuses()
			require.Equal(t, string(tc.want), st[len(st)-1])
		})
	}
}

// runCallConv is runCall with the test's conversation.
func runCallConv(t *testing.T, caller *fakeLeg, cv *conv, f func(ctx context.Context, p call.Phone) error) {
	t.Helper()
	cv.run = f
	runCallWith(t, caller, cv)
}

// TestDialOutcomes: a human who is busy, declines, does not answer or
// cannot be reached leaves the caller with the conversation.
func TestDialOutcomes(t *testing.T) {
	defer goleak.VerifyNone(t)
	cases := []struct {
		err  error
		want transfer.Status
	}{
		{&call.DialError{Progress: call.ProgressBusy, SIPStatus: 486, Reason: "Busy Here", ByCallee: true}, transfer.StatusBusy},
		{&call.DialError{Progress: call.ProgressBusy, SIPStatus: 603, Reason: "Decline", ByCallee: true}, transfer.StatusDeclined},
		{&call.DialError{Progress: call.ProgressNoAnswer, Reason: "no answer within the ring timeout"}, transfer.StatusNoAnswer},
		{&call.DialError{Progress: call.ProgressFailed, SIPStatus: 404, Reason: "Not Found", ByCallee: true}, transfer.StatusFailed},
	}
	for _, tc := range cases {
		t.Run(string(tc.want), func(t *testing.T) {
			caller, human := newFakeLeg("caller"), newFakeLeg("human")
			human.ansErr = tc.err
			s := newService(t, &dialer{next: []*fakeLeg{human}})
			runCall(t, caller, func(ctx context.Context, p call.Phone) error {
				res := result(t, start(t, ctx, s, p, transfer.Request{TargetURI: "tel:+14155550199", Mode: transfer.ModeWarm}, &reporter{}))
				require.Equal(t, tc.want, res.Status)
				require.Eventually(t, func() bool { _, closed := human.state(); return closed == 1 }, 3*time.Second, 10*time.Millisecond)
				return call.Hangup("done")
			})
		})
	}
}

// TestCallerLeaves: the caller hangs up while the human's phone rings:
// the dial is cancelled and the human's leg released.
func TestCallerLeaves(t *testing.T) {
	defer goleak.VerifyNone(t)
	caller, human := newFakeLeg("caller"), newFakeLeg("human")
	human.answer = make(chan struct{}) // never answers
	human.ring = true
	s := newService(t, &dialer{next: []*fakeLeg{human}})
	rep := &reporter{}
	runCall(t, caller, func(ctx context.Context, p call.Phone) error {
		ch := start(t, ctx, s, p, transfer.Request{TargetURI: "sip:human@127.0.0.1", Mode: transfer.ModeBridge}, rep)
		require.Eventually(t, func() bool { return slices.Contains(rep.statuses(), string(transfer.StatusRinging)) },
			5*time.Second, time.Millisecond, "the human's phone never rang")
		caller.cancel(sip.ErrRemoteBye)
		require.Equal(t, transfer.StatusCallerLeft, result(t, ch).Status)
		<-ctx.Done()
		return nil
	})
	_, closed := human.state()
	require.Equal(t, 1, closed)
}

// TestRefer: a blind REFER followed to its NOTIFYs; mode auto bridges
// after a refusal of REFER itself or a REFER that reports nothing, not
// after a refusal of the target's.
func TestRefer(t *testing.T) {
	defer goleak.VerifyNone(t)
	refused := func(status int) func(context.Context, string, func(int)) error {
		return func(context.Context, string, func(int)) error {
			return &sip.StatusError{Method: "REFER", Status: status, Reason: "No"}
		}
	}
	cases := []struct {
		name     string
		mode     transfer.Mode
		refer    func(context.Context, string, func(int)) error
		want     transfer.Status
		fellBack bool
	}{
		{"referred", transfer.ModeRefer, func(_ context.Context, _ string, p func(int)) error { p(202); p(100); p(180); return nil }, transfer.StatusReferred, false},
		{"refused", transfer.ModeRefer, refused(405), transfer.StatusFailed, false},
		{"auto 405", transfer.ModeAuto, refused(405), transfer.StatusBridged, true},
		{"auto 488", transfer.ModeAuto, refused(488), transfer.StatusFailed, false},
		{"auto silent", transfer.ModeAuto, func(ctx context.Context, _ string, p func(int)) error { p(202); <-ctx.Done(); return ctx.Err() }, transfer.StatusBridged, true},
		{"auto busy", transfer.ModeAuto, func(_ context.Context, _ string, p func(int)) error {
			p(202)
			p(100)
			return &sip.StatusError{Method: "REFER", Status: 486, Reason: "transfer target refused"}
		}, transfer.StatusBusy, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			caller, human := newFakeLeg("caller"), newFakeLeg("human")
			caller.refer = tc.refer
			s := newService(t, &dialer{next: []*fakeLeg{human}})
			runCall(t, caller, func(ctx context.Context, p call.Phone) error {
				res := result(t, start(t, ctx, s, p, transfer.Request{TargetURI: "sip:desk@pbx.example", Mode: tc.mode}, &reporter{}))
				require.Equal(t, tc.want, res.Status, res.Reason)
				require.Equal(t, tc.fellBack, res.FellBack)
				return call.Hangup("done")
			})
			require.Equal(t, "sip:desk@pbx.example", caller.referred[0])
		})
	}
}

// TestAttended: refer with Replaces calls the human first, bridges them,
// then REFERs the caller's side to the human's dialog; a refused REFER
// leaves the bridge.
func TestAttended(t *testing.T) {
	defer goleak.VerifyNone(t)
	for _, ok := range []bool{true, false} {
		caller, human := newFakeLeg("caller"), newFakeLeg("human")
		caller.refer = func(_ context.Context, _ string, p func(int)) error {
			if !ok {
				return &sip.StatusError{Method: "REFER", Status: 403, Reason: "Forbidden"}
			}
			p(202)
			p(200)
			return nil
		}
		s := newService(t, &dialer{next: []*fakeLeg{human}})
		runCall(t, caller, func(ctx context.Context, p call.Phone) error {
			res := result(t, start(t, ctx, s, p, transfer.Request{TargetURI: "sip:human@pbx.example", Mode: transfer.ModeRefer, Replaces: true}, &reporter{}))
			if ok {
				require.Equal(t, transfer.StatusReferred, res.Status)
			} else {
				require.Equal(t, transfer.StatusBridged, res.Status)
				require.True(t, res.FellBack)
			}
			return call.Hangup("done")
		})
		require.Equal(t, "sip:human@pbx.example?Replaces=human%3Bto-tag%3Db%3Bfrom-tag%3Da", caller.referred[0])
	}
}

// TestHold: the caller hears the hold music and the conversation hears
// nothing; resume gives them back to each other.
func TestHold(t *testing.T) {
	defer goleak.VerifyNone(t)
	caller := newFakeLeg("caller")
	s := newService(t, &dialer{})
	cv := &conv{}
	runCallConv(t, caller, cv, func(ctx context.Context, p call.Phone) error {
		stop := make(chan struct{})
		defer close(stop)
		go caller.talk(voicePCM(3), stop)
		require.Eventually(t, func() bool { return cv.heardFrames() > 0 }, 3*time.Second, 10*time.Millisecond)
		require.NoError(t, s.Hold(ctx, p, transfer.HoldMusic, ""))
		heard, before := cv.heardFrames(), len(caller.wire.bytes())
		require.Eventually(t, func() bool { return len(sentSince(caller, before)) > 8000 }, 3*time.Second, 10*time.Millisecond)
		require.True(t, loud(sentSince(caller, before)), "the caller hears no music")
		require.Equal(t, heard, cv.heardFrames(), "the conversation heard the held caller")
		require.NoError(t, transfer.Resume(p))
		require.Eventually(t, func() bool { return cv.heardFrames() > heard }, 3*time.Second, 10*time.Millisecond)
		return call.Hangup("done")
	})
}

// TestPrepareRefuses: what Prepare refuses, each a 400 naming the field.
func TestPrepareRefuses(t *testing.T) {
	defer goleak.VerifyNone(t)
	caller := newFakeLeg("caller")
	caller.kind = "webrtc"
	s := newService(t, &dialer{})
	runCall(t, caller, func(ctx context.Context, p call.Phone) error {
		for _, tc := range []struct {
			req   transfer.Request
			param string
		}{
			{transfer.Request{TargetURI: "mailto:x@y"}, "target_uri"},
			{transfer.Request{TargetURI: "sip:a@b", Mode: "blind"}, "mode"},
			{transfer.Request{TargetURI: "sip:a@b", Mode: transfer.ModeRefer}, "mode"},
			{transfer.Request{TargetURI: "sip:a@b", Mode: transfer.ModeBridge, Replaces: true}, "replaces"},
			{transfer.Request{TargetURI: "sip:a@b", Mode: transfer.ModeBridge, Briefing: "hi"}, "briefing"},
			{transfer.Request{TargetURI: "sip:a@b", Mode: transfer.ModeWarm, Accept: "maybe"}, "accept"},
			{transfer.Request{TargetURI: "sip:a@b", Timeout: time.Second}, "timeout_s"},
			{transfer.Request{TargetURI: "sip:a@b", HoldAudio: "../etc/x.wav"}, "hold_audio"},
			{transfer.Request{TargetURI: "sip:a@b", HoldAudio: "missing.wav"}, "hold_audio"},
			{transfer.Request{TargetURI: "sip:a@b", Mode: transfer.ModeWarm, Accept: "answer"}, ""},
			{transfer.Request{TargetURI: "tel:+14155550100", Mode: transfer.ModeAuto, Accept: ""}, ""},
		} {
			req, param := tc.req, tc.param
			_, err := s.Prepare(ctx, p, req)
			if param == "" {
				require.NoError(t, err, "%+v", req)
				continue
			}
			require.Error(t, err, "%+v", req)
			require.Equal(t, param, paramOf(err), "%+v: %v", req, err)
		}
		return call.Hangup("done")
	})
}

// paramOf is the API field a 400 names.
func paramOf(err error) string {
	var he *httpx.Error
	if errors.As(err, &he) {
		return he.Param
	}
	return ""
}
