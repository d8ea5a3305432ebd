package call

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"switchboard/media"
)

// codeFrames returns n frames of random G.711 code words (no silence
// byte of either law), so where each lands on a wire can be found.
func codeFrames(n int, seed uint64) [][]byte {
	rng := rand.New(rand.NewPCG(seed, 1))
	out := make([][]byte, n)
	for i := range out {
		f := make([]byte, 160)
		for j := range f {
			f[j] = byte(0x20 + rng.IntN(0x50))
		}
		out[i] = f
	}
	return out
}

// talk sends frames on leg as a phone does, one a frame, paced by the
// leg's own frame clock: each frame goes once the session took all but
// talkLead of those sent before it, so its jitter buffer (80 ms) neither
// runs dry nor piles up, however late the test's goroutine is woken.
func talk(t *testing.T, leg *fakeLeg, frames [][]byte) {
	t.Helper()
	base := leg.taken()
	for i, f := range frames {
		if i > talkLead {
			require.Eventually(t, func() bool { return leg.taken() >= base+uint64(i-talkLead) }, 3*time.Second, time.Millisecond,
				"%s: the session's frame clock stopped", leg.id)
		}
		leg.send(f)
	}
}

// talkLead is how many frames a talking leg sends ahead of its session's
// frame clock (talk).
const talkLead = 2

// TestPartiesBridge: a second leg joins a live call; the caller and it
// hear each other (code words relayed untouched between two legs of one
// law, transcoded once between the two laws), the conversation hears
// neither, keys pass between them; the caller goes back to the
// conversation, then on hold to a loop; the second party leaves and is
// released, whatever the call does after.
func TestPartiesBridge(t *testing.T) {
	defer goleak.VerifyNone(t)
	for _, law := range []media.Codec{media.PCMU, media.PCMA} {
		t.Run(law.Name, func(t *testing.T) {
			caller := newFakeLeg(media.PCMU, Route{AgentID: "ag_1"})
			human := newFakeLeg(law, Route{})
			human.id = "human-1"
			conv := &fakeConv{format: media.PCM16(24000)}
			conv.run = func(_ context.Context, p Phone) error {
				c := p.(*Call)
				party, err := c.Join(human, InbandOff)
				require.NoError(t, err)
				require.NoError(t, c.Hear(c.Caller(), FromParty(party)))
				require.NoError(t, c.Hear(party, FromParty(c.Caller())))
				require.NoError(t, c.ConversationHears(nil))
				heardBefore := len(conv.heard())

				fromHuman := codeFrames(5, 1)
				talk(t, human, fromHuman)
				want := bytes.Join(fromHuman, nil)
				if law != media.PCMU {
					want = media.PCMU.Transcode(nil, law, want)
				}
				caller.heard(t, want)
				fromCaller := codeFrames(5, 9)
				talk(t, caller, fromCaller)
				want = bytes.Join(fromCaller, nil)
				if law != media.PCMU {
					want = law.Transcode(nil, media.PCMU, want)
				}
				human.heard(t, want)
				require.Equal(t, heardBefore, len(conv.heard()), "the conversation hears neither party")

				human.key('5')
				require.Eventually(t, func() bool {
					caller.mu.Lock()
					defer caller.mu.Unlock()
					return len(caller.dtmf) == 1 && caller.dtmf[0] == "5"
				}, 3*time.Second, 5*time.Millisecond, "the human's key reaches the caller")
				require.Empty(t, conv.keys)

				// Back to the conversation.
				require.NoError(t, c.Hear(c.Caller(), FromConversation()))
				require.NoError(t, c.ConversationHears(c.Caller()))
				prompt := codeFrames(3, 40)
				p.Play("back", media.AppendPCM16LE(nil, sine(1000, 24000, 4800)))
				require.Eventually(t, func() bool { return p.Pending() == 0 }, 3*time.Second, 5*time.Millisecond)
				caller.send(prompt[0])
				require.Eventually(t, func() bool { return len(conv.heard()) > heardBefore }, 3*time.Second, 5*time.Millisecond)

				// Hold: a loop, shared and converted once for the law.
				music := sine(440, 8000, 800)
				loop, err := media.NewLoop(music, 8000)
				require.NoError(t, err)
				require.NoError(t, c.Hear(c.Caller(), FromLoop(loop)))
				caller.heard(t, media.PCMU.EncodeFrame(nil, music)[:320])

				require.NoError(t, c.Leave(party, "done"))
				require.ErrorIs(t, c.Leave(party, "again"), ErrNotInCall)
				require.ErrorIs(t, c.Hear(party, Nothing()), ErrNotInCall)
				return Hangup("done")
			}
			runCall(t, caller, conv, nil, Options{})
			human.mu.Lock()
			defer human.mu.Unlock()
			require.Equal(t, "done", human.hungUp)
			require.Equal(t, 1, human.closeRuns)
		})
	}
}

// TestSwitchIsGlitchFree: the caller hears the conversation's audio, then
// is switched to a party that streams; between the last frame of the one
// and the first of the other there is at most one frame of silence, and
// nothing of the conversation plays after the switch.
func TestSwitchIsGlitchFree(t *testing.T) {
	defer goleak.VerifyNone(t)
	caller := newFakeLeg(media.PCMU, Route{AgentID: "ag_1"})
	human := newFakeLeg(media.PCMU, Route{})
	human.id = "human-1"
	conv := &fakeConv{format: media.FormatPCMU}
	speech := codeFrames(50, 3) // the conversation's 1 s
	stream := codeFrames(100, 60)
	conv.run = func(ctx context.Context, p Phone) error {
		c := p.(*Call)
		party, err := c.Join(human, InbandOff)
		require.NoError(t, err)
		stop := make(chan struct{})
		done := make(chan struct{})
		go func() { // the human talks in real time
			defer close(done)
			tk := time.NewTicker(20 * time.Millisecond)
			defer tk.Stop()
			for _, f := range stream {
				select {
				case <-stop:
					return
				case <-tk.C:
					human.send(f)
				}
			}
		}()
		defer func() { close(stop); <-done }()
		p.Play("answer", bytes.Join(speech, nil))
		caller.heard(t, speech[10])
		require.NoError(t, c.Hear(c.Caller(), FromParty(party)))
		// A few frames of the stream after the switch.
		require.Eventually(t, func() bool {
			w, n := caller.wire.bytes(), 0
			for _, f := range stream {
				if bytes.Contains(w, f) {
					n++
				}
			}
			return n >= 5
		}, 3*time.Second, 5*time.Millisecond)
		w := caller.wire.bytes()
		last := -1
		for _, f := range speech {
			if i := bytes.Index(w, f); i >= 0 {
				last = max(last, i+len(f))
			}
		}
		first := len(w)
		for _, f := range stream {
			if i := bytes.Index(w, f); i >= 0 && i < first {
				first = i
			}
		}
		var layout []string
		for k := 0; k+160 <= len(w); k += 160 {
			fr := w[k : k+160]
			tag := "?"
			for i, f := range speech {
				if bytes.Equal(f, fr) {
					tag = fmt.Sprintf("s%d", i)
				}
			}
			for i, f := range stream {
				if bytes.Equal(f, fr) {
					tag = fmt.Sprintf("h%d", i)
				}
			}
			if fr[0] == 0xff && fr[159] == 0xff {
				tag = "_"
			}
			layout = append(layout, tag)
		}
		t.Logf("wire: %v", layout)
		require.Positive(t, last)
		require.GreaterOrEqual(t, first, last, "nothing of the conversation after the switch")
		require.LessOrEqual(t, first-last, 160, "at most one frame between the two sources")
		return Hangup("done")
	}
	runCall(t, caller, conv, nil, Options{})
}
