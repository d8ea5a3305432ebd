package test

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"switchboard/dtmf"
	"switchboard/media"
	"switchboard/media/opus"
)

// TestSippOpusCodecs: sipp offers Opus only, G.711 only, both, and both
// to numbers whose codecs say otherwise. The answer names the codec
// chosen, and the RTP the appliance sends says the same: Opus packets at
// the offer's payload type that libopus decodes, timestamps 960 apart
// (48 kHz clock, 20 ms); PCMU 160 apart. The Opus call is held and
// resumed: RTP stops, comes back, and its timestamps kept running.
func TestSippOpusCodecs(t *testing.T) {
	d := callDaemon(t, nil)
	ag := d.JSON(t, "POST", "/v1/agents", d.OwnerKey, map[string]any{"name": "codecs", "engine": "loopback"}, 200)
	for num, codecs := range map[string][]string{"+14155550160": {"PCMU", "OPUS"}, "+14155550161": {"OPUS"}} {
		d.JSON(t, "POST", "/v2/phone-numbers", d.OwnerKey, map[string]any{"origin": "byo_trunk", "name": "codecs " + num,
			"phone_number": num, "agent_id": ag["agent_id"], "codecs": codecs}, 200)
	}
	const (
		opusMap = "      a=rtpmap:96 opus/48000/2\n      a=fmtp:96 useinbandfec=1;stereo=0\n"
		pcmuMap = "      a=rtpmap:0 PCMU/8000\n"
		evMap   = "      a=rtpmap:101 telephone-event/8000\n      a=fmtp:101 0-16\n"
	)
	for _, tc := range []struct {
		name, formats, rtpmaps, service string
		status                          int
		pt                              int
		hold                            bool
	}{
		{"Opus only", "96 101", opusMap + evMap, "14155550150", 200, 96, true},
		{"G.711 only", "0 101", pcmuMap + evMap, "14155550150", 200, 0, false},
		{"G.711 and Opus: the best", "0 96 101", pcmuMap + opusMap + evMap, "14155550150", 200, 96, false},
		{"a number that prefers PCMU", "96 0 101", opusMap + pcmuMap + evMap, "14155550160", 200, 0, false},
		{"a number that takes Opus only", "0 101", pcmuMap + evMap, "14155550161", 488, 0, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			peer := newRTPPeer(t)
			s := scenario{Name: "codecs", Port: fmt.Sprint(peer.port()), Formats: tc.formats, Rtpmaps: tc.rtpmaps, Ptime: 20,
				WantPT: tc.pt, Status: tc.status, PauseMs: 1000}
			if tc.hold {
				s.HoldMs = 1000
			}
			start := time.Now()
			runSipp(t, d.App.SIPAddr(), render(t, "call.xml.tmpl", s), tc.service).requireOK(t)
			requireNoCalls(t, d)
			got := peer.received()
			if tc.status != 200 {
				require.Empty(t, got)
				return
			}
			require.Greater(t, len(got), 40, "RTP from the appliance")
			step := uint32(160)
			if tc.pt == 96 {
				step = 960
			}
			dec, err := opus.NewDecoder(48000)
			require.NoError(t, err)
			defer dec.Close()
			gap := time.Duration(0)
			for i, p := range got {
				require.Equal(t, uint8(tc.pt), p.hdr.PayloadType, "packet %d", i)
				if tc.pt == 96 {
					n, ok := media.OpusPacketSamples(p.payload)
					require.True(t, ok, "packet %d is Opus", i)
					require.Equal(t, 960, n)
					pcm, err := dec.Decode(nil, p.payload, 0)
					require.NoError(t, err, "libopus decodes packet %d", i)
					require.Len(t, pcm, 960)
				}
				if i == 0 {
					continue
				}
				prev := got[i-1]
				require.Equal(t, prev.hdr.SequenceNumber+1, p.hdr.SequenceNumber)
				dt := p.at.Sub(prev.at)
				if dt < 500*time.Millisecond {
					require.Equal(t, step, p.hdr.Timestamp-prev.hdr.Timestamp, "packet %d", i)
					continue
				}
				// The hold: the timestamps ran on with the clock.
				gap = dt
				ticks := time.Duration(p.hdr.Timestamp-prev.hdr.Timestamp) * time.Second / time.Duration(step*50)
				require.InDelta(t, dt.Seconds(), ticks.Seconds(), 0.1, "timestamps across the hold")
			}
			t.Logf("%d packets in %v; hold gap %v", len(got), time.Since(start).Round(time.Millisecond), gap)
			if tc.hold {
				require.Greater(t, gap, 700*time.Millisecond, "no RTP while held")
			} else {
				require.Zero(t, gap)
			}
		})
	}
}

// TestDTMFOpus: a caller on Opus (the test's own libopus session at
// 24 kHz, telephone-event/8000 beside opus/48000/2) presses keys as RFC
// 4733 events, then plays keys as tones inside its Opus audio: the model
// receives both, the tones found by the in-band detector on the leg's
// 24 kHz audio resampled to 8 kHz; the model's send_dtmf reaches the
// caller as events on the Opus call's stream.
func TestDTMFOpus(t *testing.T) {
	t.Parallel()
	e := newDTMFEnv(t)
	p := e.dial(t, e.number(t, map[string]any{"dtmf_inband": "on"}), callerOptions{Opus: true})
	c := e.accept(t)
	live := e.liveCall(t)
	require.Equal(t, media.PCM16(24000), live.Leg().Audio().Format(), "Opus decoded at the model's rate")
	require.Equal(t, "opus", p.oc.Media().Codec.Name)
	ctx := ctxFor(t, 30*time.Second)

	p.press(t, "12#", 80*time.Millisecond, 80*time.Millisecond)
	require.Equal(t, modelText("12", dtmf.FlushHash), userText(t, ctx, c))

	var m mix
	m.silence(200 * time.Millisecond)
	m.generated(t, "34#", -12, 80*time.Millisecond, 100*time.Millisecond)
	m.silence(300 * time.Millisecond)
	p.play(m.noise(-60, 3))
	require.Equal(t, modelText("34", dtmf.FlushHash), userText(t, ctx, c))
	require.Equal(t, []string{"1/rtp", "2/rtp", "#/rtp", "3/inband", "4/inband", "#/inband"}, e.keyLogs())

	callID, err := c.FunctionCall("send_dtmf", `{"digits":"56"}`)
	require.NoError(t, err)
	out, err := c.AwaitFunctionOutput(ctx, callID)
	require.NoError(t, err)
	require.JSONEq(t, `{"ok":true}`, out)
	require.Eventually(t, func() bool { ev, _ := p.received(); return ev == "56" }, 5*time.Second, 10*time.Millisecond)
}
