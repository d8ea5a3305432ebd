package call

import (
	"bytes"
	"context"
	"errors"
	"math"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"switchboard/media"
)

// toneAmp is the amplitude of the freq component of pcm at rate.
func toneAmp(pcm []int16, freq float64, rate int) float64 {
	var re, im float64
	for i, v := range pcm {
		ph := 2 * math.Pi * freq * float64(i) / float64(rate)
		re += float64(v) * math.Cos(ph)
		im += float64(v) * math.Sin(ph)
	}
	return 2 * math.Hypot(re, im) / float64(len(pcm))
}

// toneFrames cuts a tone into 20 ms frames of PCMU code words.
func toneFrames(freq float64, n int) [][]byte {
	pcm := sine(freq, 8000, 160*n)
	out := make([][]byte, n)
	for i := range out {
		out[i] = media.PCMU.EncodeFrame(nil, pcm[i*160:(i+1)*160])
	}
	return out
}

// lastPCM is the last d of what leg sent, decoded.
func lastPCM(leg *fakeLeg, d time.Duration) []int16 {
	w := leg.wire.bytes()
	n := int(d / time.Millisecond * 8)
	if len(w) > n {
		w = w[len(w)-n:]
	}
	return media.PCMU.DecodeFrame(nil, w)
}

// endlessTalk sends frames on leg in real time, over and over, until stop.
func endlessTalk(leg *fakeLeg, frames [][]byte, stop <-chan struct{}) {
	tk := time.NewTicker(20 * time.Millisecond)
	defer tk.Stop()
	for i := 0; ; i++ {
		select {
		case <-stop:
			return
		case <-tk.C:
			leg.send(frames[i%len(frames)])
		}
	}
}

// TestSuperviseListen: a supervisor listening hears the caller's line
// (the caller's voice and the conversation's, mixed) while nobody hears
// them: neither the caller nor the conversation; their keys go nowhere,
// the caller's keys go to the conversation and are not relayed to them.
// The record notes who listened; their leaving is noted and releases
// their leg; the call goes on with its conversation.
func TestSuperviseListen(t *testing.T) {
	defer goleak.VerifyNone(t)
	synctest.Test(t, func(t *testing.T) {
		sched := media.NewScheduler(1) // of the bubble: its clock is synctest's
		caller := newFakeLeg(media.PCMU, Route{AgentID: "ag_1"})
		sup := newFakeLeg(media.PCMU, Route{})
		sup.id = "supervisor-1"
		caller.sched, sup.sched = sched, sched
		conv := &fakeConv{format: media.FormatPCMU}
		conv.run = func(ctx context.Context, p Phone) error {
			c := p.(*Call)
			stop := make(chan struct{})
			var wg sync.WaitGroup
			defer func() { close(stop); wg.Wait() }()
			wg.Add(2)
			go func() { defer wg.Done(); endlessTalk(caller, toneFrames(1000, 50), stop) }()
			party, err := c.Supervise(sup, Supervision{KeyID: "key_1", KeyName: "desk"})
			require.NoError(t, err)
			require.Equal(t, sup, party.Leg())
			fromSup := codeFrames(50, 7)
			go func() { defer wg.Done(); endlessTalk(sup, fromSup, stop) }()
			// The conversation speaks: 440 Hz for 2 s.
			p.Play("agent", media.PCMU.EncodeFrame(nil, sine(440, 8000, 16000)))

			require.Eventually(t, func() bool {
				pcm := lastPCM(sup, 200*time.Millisecond)
				return len(pcm) == 1600 && toneAmp(pcm, 1000, 8000) > 2000 && toneAmp(pcm, 440, 8000) > 2000
			}, 3*time.Second, 20*time.Millisecond, "the supervisor hears the caller and the conversation")
			pcm := lastPCM(sup, 200*time.Millisecond)
			t.Logf("the supervisor hears 1000 Hz (caller) at %.0f and 440 Hz (conversation) at %.0f", toneAmp(pcm, 1000, 8000), toneAmp(pcm, 440, 8000))
			require.Less(t, toneAmp(pcm, 1700, 8000), 300.0, "nothing else")

			for _, f := range fromSup {
				require.False(t, bytes.Contains(caller.wire.bytes(), f), "the caller never hears the supervisor")
				require.False(t, bytes.Contains(conv.heard(), f), "the conversation never hears the supervisor")
			}
			require.Empty(t, c.hearers(c.Caller()), "a listener is not one of the caller's hearers")
			sup.key('7')
			caller.key('5')
			require.Eventually(t, func() bool {
				conv.mu.Lock()
				defer conv.mu.Unlock()
				return bytes.Equal(conv.keys, []byte("5"))
			}, 3*time.Second, 5*time.Millisecond, "the caller's key reaches the conversation, the supervisor's does not")
			// A relayed key would go by a goroutine of the call: once every
			// goroutine of the bubble is blocked, it would have been sent.
			synctest.Wait()
			sup.mu.Lock()
			relayed := append([]string(nil), sup.dtmf...)
			sup.mu.Unlock()
			require.Empty(t, relayed, "the caller's keys are not relayed to a listener")
			caller.mu.Lock()
			relayed = append([]string(nil), caller.dtmf...)
			caller.mu.Unlock()
			require.Empty(t, relayed, "the supervisor's keys reach nobody")

			// The supervisor closes the page: they leave, the call goes on.
			sup.cancel(errors.New("the browser closed the connection"))
			require.Eventually(t, func() bool {
				sup.mu.Lock()
				defer sup.mu.Unlock()
				return sup.closeRuns == 1
			}, 3*time.Second, 5*time.Millisecond, "the supervisor's leg is released")
			require.NoError(t, ctx.Err(), "the call goes on")
			require.ErrorIs(t, c.Hear(party, Nothing()), ErrNotInCall)
			return Hangup("done")
		}
		c := runCall(t, caller, conv, nil, Options{})
		var steps []string
		for _, n := range c.Snapshot().Notes {
			if n.Kind == NoteSupervisor {
				d := n.Data.(map[string]any)
				require.Equal(t, "key_1", d["key_id"])
				require.Equal(t, "desk", d["key_name"])
				require.Equal(t, "supervisor-1", d["party_id"])
				require.False(t, n.At.IsZero())
				steps = append(steps, n.Text)
			}
		}
		require.Equal(t, []string{SuperviseListen, SuperviseLeft}, steps)
		require.Equal(t, EndedByAppliance, c.Snapshot().EndedBy)
		require.Equal(t, 1, conv.closed)
	})
}

// TestSuperviseTakeOver: a supervisor takes the call over: the caller
// and the supervisor hear each other (code words relayed untouched), the
// conversation hears nothing more and its Run ends with
// ErrConversationEnded while the call goes on; a second takeover is
// refused, a listener may still join and hears the caller's line (the
// caller and the supervisor); the record says who took over and when
// (written at once). When the supervisor hangs up, the caller is hung up
// on, the listener released, the conversation closed once.
func TestSuperviseTakeOver(t *testing.T) {
	defer goleak.VerifyNone(t)
	caller := newFakeLeg(media.PCMU, Route{AgentID: "ag_1"})
	sup := newFakeLeg(media.PCMU, Route{})
	sup.id = "supervisor-1"
	listener := newFakeLeg(media.PCMU, Route{})
	listener.id = "listener-1"
	conv := &fakeConv{format: media.PCM16(24000)}
	runEnded := make(chan error, 1)
	scenario := make(chan struct{})
	conv.run = func(ctx context.Context, p Phone) error {
		c := p.(*Call)
		go func() {
			defer close(scenario)
			takeOver(t, c, caller, sup, listener, conv, runEnded)
		}()
		<-ctx.Done()
		runEnded <- context.Cause(ctx)
		return nil
	}
	j := &testJournal{}
	c := runCall(t, caller, conv, nil, Options{Journal: j})
	<-scenario
	s := c.Snapshot()
	require.Equal(t, EndedByAppliance, s.EndedBy)
	require.Equal(t, "the supervisor hung up", s.EndReason)
	caller.mu.Lock()
	require.Equal(t, "the supervisor hung up", caller.hungUp)
	caller.mu.Unlock()
	listener.mu.Lock()
	require.Equal(t, "call ended", listener.hungUp)
	require.Equal(t, 1, listener.closeRuns)
	listener.mu.Unlock()
	require.Equal(t, 1, conv.closed)
	var steps []string
	for _, n := range s.Notes {
		if n.Kind == NoteSupervisor {
			steps = append(steps, n.Text+" "+n.Data.(map[string]any)["party_id"].(string))
		}
	}
	require.Contains(t, steps, "takeover supervisor-1")
	require.Contains(t, steps, "listen listener-1")
	require.Contains(t, steps, "left supervisor-1")
	require.Contains(t, steps, "left listener-1")
}

func takeOver(t *testing.T, c *Call, caller, sup, listener *fakeLeg, conv *fakeConv, runEnded <-chan error) {
	stop := make(chan struct{})
	var wg sync.WaitGroup
	defer func() { close(stop); wg.Wait() }()
	fromCaller := codeFrames(50, 3)
	fromSup := codeFrames(50, 11)
	wg.Add(1)
	go func() { defer wg.Done(); endlessTalk(caller, fromCaller, stop) }()
	if !assert.Eventually(t, func() bool { return len(conv.heard()) > 0 }, 3*time.Second, 5*time.Millisecond, "the conversation hears the caller") {
		return
	}
	changes := c.m.opts.Journal.(*testJournal).changes.Load()
	party, err := c.Supervise(sup, Supervision{TakeOver: true, KeyID: "key_1", KeyName: "desk"})
	if !assert.NoError(t, err) {
		return
	}
	select {
	case cause := <-runEnded:
		assert.ErrorIs(t, cause, ErrConversationEnded, "the conversation's Run ends")
		assert.Contains(t, cause.Error(), "taken over by supervisor desk (key_1)")
	case <-time.After(3 * time.Second):
		t.Error("the conversation's Run did not end")
		return
	}
	assert.Greater(t, c.m.opts.Journal.(*testJournal).changes.Load(), changes, "the takeover is written at once")
	assert.Equal(t, StateActive, c.Snapshot().State, "the call goes on")
	heard := len(conv.heard())
	wg.Add(1)
	go func() { defer wg.Done(); endlessTalk(sup, fromSup, stop) }()
	caller.heard(t, fromSup[5])
	sup.heard(t, fromCaller[5])
	caller.heard(t, fromSup[10]) // five more frames of the supervisor's flowed
	assert.Equal(t, heard, len(conv.heard()), "the conversation hears nothing more")
	assert.ErrorIs(t, c.ConversationHears(c.Caller()), ErrConversationEnded)
	assert.ErrorIs(t, c.Hear(c.Caller(), FromConversation()), ErrConversationEnded)
	assert.ErrorIs(t, c.EndConversation("again"), ErrConversationEnded)

	other := newFakeLeg(media.PCMU, Route{})
	other.id = "supervisor-2"
	_, err = c.Supervise(other, Supervision{TakeOver: true, KeyID: "key_2"})
	assert.ErrorIs(t, err, ErrConversationEnded, "a call is taken over once")
	assert.Zero(t, other.closeRuns, "a refused takeover never started the leg")

	// A listener hears the caller and the supervisor, mixed.
	_, err = c.Supervise(listener, Supervision{KeyID: "key_3"})
	if !assert.NoError(t, err) {
		return
	}
	assert.Eventually(t, func() bool {
		pcm := lastPCM(listener, 200*time.Millisecond)
		return len(pcm) == 1600 && media.RMS(pcm) > 1000
	}, 3*time.Second, 20*time.Millisecond, "the listener hears the line")

	// Keys pass between the caller and the supervisor, as on a bridge.
	caller.key('3')
	assert.Eventually(t, func() bool {
		sup.mu.Lock()
		defer sup.mu.Unlock()
		return len(sup.dtmf) == 1 && sup.dtmf[0] == "3"
	}, 3*time.Second, 5*time.Millisecond, "the caller's key reaches the supervisor")
	conv.mu.Lock()
	assert.Empty(t, conv.keys, "the conversation gets no key after the takeover")
	conv.mu.Unlock()

	// The supervisor hangs up: the caller has nobody left.
	assert.Equal(t, sup, party.Leg())
	sup.cancel(errors.New("the browser closed the connection"))
}

// TestSuperviseCallerHangsUp: the caller hanging up ends the call for a
// supervisor who took it over and for a listener: both are released.
func TestSuperviseCallerHangsUp(t *testing.T) {
	defer goleak.VerifyNone(t)
	caller := newFakeLeg(media.PCMU, Route{AgentID: "ag_1"})
	sup := newFakeLeg(media.PCMA, Route{})
	sup.id = "supervisor-1"
	listener := newFakeLeg(media.PCMU, Route{})
	listener.id = "listener-1"
	conv := &fakeConv{format: media.PCM16(24000)}
	conv.run = func(ctx context.Context, p Phone) error {
		c := p.(*Call)
		_, err := c.Supervise(listener, Supervision{KeyID: "key_3"})
		require.NoError(t, err)
		go func() {
			if _, err := c.Supervise(sup, Supervision{TakeOver: true, KeyID: "key_1"}); !assert.NoError(t, err) {
				return
			}
			// The caller talks to the supervisor (transcoded to A-law),
			// then hangs up.
			talk(t, caller, codeFrames(5, 2))
			caller.cancel(errors.New("BYE"))
		}()
		<-ctx.Done()
		return nil
	}
	c := runCall(t, caller, conv, nil, Options{})
	require.Equal(t, EndedByCaller, c.Snapshot().EndedBy)
	for _, l := range []*fakeLeg{sup, listener} {
		l.mu.Lock()
		require.Equal(t, "call ended", l.hungUp, l.id)
		require.Equal(t, 1, l.closeRuns, l.id)
		l.mu.Unlock()
	}
	require.Equal(t, 1, conv.closed)
}

// TestSuperviseRefusals: a supervisor cannot join a call before its
// answer; a takeover whose leg cannot start leaves the conversation
// running; only the caller's line can be listened to. A call whose
// conversation ended (the caller handed to a human) ends when that human
// hangs up.
func TestSuperviseRefusals(t *testing.T) {
	defer goleak.VerifyNone(t)
	synctest.Test(t, func(t *testing.T) {
		sched := media.NewScheduler(1) // of the bubble: its clock is synctest's
		leg := func(route Route) *fakeLeg {
			l := newFakeLeg(media.PCMU, route)
			l.sched = sched
			return l
		}
		caller := leg(Route{AgentID: "ag_1"})
		conv := &fakeConv{format: media.PCM16(24000)}
		conv.prepare = func(p Phone) {
			_, err := p.(*Call).Supervise(leg(Route{}), Supervision{TakeOver: true, KeyID: "k"})
			require.ErrorIs(t, err, ErrNotActive, "not before the answer")
		}
		conv.run = func(ctx context.Context, p Phone) error {
			c := p.(*Call)
			broken := leg(Route{})
			broken.startErr = errors.New("no media")
			_, err := c.Supervise(broken, Supervision{TakeOver: true, KeyID: "k"})
			require.ErrorContains(t, err, "no media")
			require.Empty(t, c.ConversationEnded(), "a failed takeover changes nothing")
			require.NoError(t, ctx.Err())
			human := leg(Route{})
			human.id = "human"
			party, err := c.Join(human, InbandOff)
			require.NoError(t, err)
			sup := leg(Route{})
			sp, err := c.Join(sup, InbandOff)
			require.NoError(t, err)
			require.ErrorContains(t, c.Hear(sp, FromMix(party)), "only the caller's line")
			require.ErrorContains(t, c.Hear(c.Caller(), FromMix(c.Caller())), "cannot hear itself")
			require.NoError(t, c.Hear(c.Caller(), FromParty(party)))
			require.NoError(t, c.EndConversation("handed over"))
			go func() {
				// The human hangs up once this Run has returned and the
				// call waits on its parties: every other goroutine of the
				// bubble is blocked.
				synctest.Wait()
				human.cancel(errors.New("BYE"))
			}()
			<-ctx.Done()
			return nil
		}
		c := runCall(t, caller, conv, nil, Options{})
		require.Equal(t, "the other party hung up", c.Snapshot().EndReason)
		require.Equal(t, EndedByAppliance, c.Snapshot().EndedBy)
	})
}

// TestSuperviseTakeOverReserved: a takeover under way (its browser still
// connecting) refuses a second one at once; it is let go when released
// (the browser never connected) and lets nobody through once the call is
// taken over; before the answer and after the end there is nothing to
// reserve.
func TestSuperviseTakeOverReserved(t *testing.T) {
	defer goleak.VerifyNone(t)
	caller := newFakeLeg(media.PCMU, Route{AgentID: "ag_1"})
	conv := &fakeConv{format: media.PCM16(24000)}
	conv.prepare = func(p Phone) {
		_, err := p.(*Call).ReserveTakeOver()
		require.ErrorIs(t, err, ErrNotActive, "not before the answer")
	}
	var call *Call
	conv.run = func(ctx context.Context, p Phone) error {
		c := p.(*Call)
		call = c
		release, err := c.ReserveTakeOver()
		require.NoError(t, err)
		_, err = c.ReserveTakeOver()
		require.ErrorIs(t, err, ErrTakingOver, "a second takeover while the first connects")
		release()
		release() // twice is harmless
		release, err = c.ReserveTakeOver()
		require.NoError(t, err, "the first never connected: the next may take over")
		sup := newFakeLeg(media.PCMU, Route{})
		_, err = c.Supervise(sup, Supervision{TakeOver: true, KeyID: "k"})
		require.NoError(t, err, "the holder takes over")
		release()
		_, err = c.ReserveTakeOver()
		require.ErrorIs(t, err, ErrConversationEnded, "taken over already")
		<-ctx.Done()
		sup.cancel(errors.New("BYE")) // the supervisor hangs up: the call ends
		return nil
	}
	runCall(t, caller, conv, nil, Options{})
	_, err := call.ReserveTakeOver()
	require.ErrorIs(t, err, ErrNotActive, "the call is over")
}
