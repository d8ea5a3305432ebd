package test

import (
	"context"
	"fmt"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"switchboard/sip"
	"switchboard/sip/siptest"
)

// human is the data of testdata/sipp/human.xml.tmpl: sipp as the human a
// transfer calls.
type human struct {
	Name     string
	Status   int // > 0: refuse the INVITE with it (and Reason)
	Reason   string
	NoAnswer bool // ring until the CANCEL
	RingMs   int
	Hello    string // a capture played once answered
	// Key is pressed (RFC 4733) KeyAfterMs after the ACK: "1" or "2".
	Key        string
	KeyAfterMs int
	Voice      string // a capture played after the key
	// HangupAfterMs > 0: the human hangs up (BYE) that long after the
	// ACK, instead of pressing a key or waiting for the appliance's BYE.
	HangupAfterMs int
	// IgnoreBye > 0: the appliance's BYE is never answered (a phone gone
	// from the network); sipp quits IgnoreBye ms after it.
	IgnoreBye int
	// ByeTimeoutMs bounds the wait for the appliance's BYE.
	ByeTimeoutMs int
	// Port is the m= port of the answer ("": sipp's own media port), PT
	// the payload type answered (0 PCMU, 8 PCMA).
	Port string
	PT   int
	// HoldDir > "": the human's phone holds the call HoldAfterMs after the
	// ACK (a re-INVITE with a=sendonly, a=inactive, or "c0" for
	// c=0.0.0.0) and takes it off hold HoldMs later (a=sendrecv).
	HoldDir     string
	HoldAfterMs int
	HoldMs      int
	// Reinvites are filled by startHuman from HoldDir.
	Reinvites []humanReinvite
}

// humanReinvite is the data of human.xml.tmpl's re-INVITE: its CSeq, the
// direction it offers and the one the answer must carry, and the answer's
// media (Port, PT) again.
type humanReinvite struct {
	CSeq    int
	Version int
	Dir     string
	Want    string
	Port    string
	PT      int
}

// holdReinvites are the re-INVITEs of h's hold: on hold, then off.
func (h human) holdReinvites() []humanReinvite {
	if h.HoldDir == "" {
		return nil
	}
	want := map[string]string{"sendonly": "recvonly", "inactive": "inactive", "c0": "inactive", "sendrecv": "sendrecv"}
	var out []humanReinvite
	for i, dir := range []string{h.HoldDir, "sendrecv"} {
		out = append(out, humanReinvite{CSeq: i + 1, Version: 2353687638 + i, Dir: dir, Want: want[dir], Port: h.Port, PT: h.PT})
	}
	return out
}

// startHuman runs sipp as the human on a free loopback port and returns
// the URI that reaches it.
func startHuman(t *testing.T, h human) (string, *sippRun) {
	t.Helper()
	if h.ByeTimeoutMs == 0 {
		h.ByeTimeoutMs = 60000
	}
	h.Reinvites = h.holdReinvites()
	port, r := startSippListener(t, "human.xml.tmpl", h, 90*time.Second, "-m", "1")
	return fmt.Sprintf("sip:human@127.0.0.1:%d", port), r
}

// TestTransferWarmKeys: sipp is the human: it answers, hears the
// briefing and presses 1 (RFC 4733, sip-tester's capture) or 2. With 1
// the baresip caller hears the hold music, then the human's voice; with 2
// the caller hears the music, then the agent telling them the transfer
// was declined (the model is told why).
func TestTransferWarmKeys(t *testing.T) {
	t.Parallel()
	hello, _ := calleePcap(t, ttsPCM(t, "Hello?"))
	voice, _ := calleePcap(t, tonePCM(humanTone, 5))
	for _, key := range []string{"1", "2"} {
		t.Run("key "+key, func(t *testing.T) {
			t.Parallel() // each key has a daemon of its own
			d := callDaemon(t, nil)
			number := transferAgent(t, d, "+14155557302")
			h := human{Name: "key" + key, RingMs: 300, Hello: hello, Key: key, KeyAfterMs: 3500}
			if key == "1" {
				h.Voice = voice // a declined human gets BYE at once
			}
			uri, sipp := startHuman(t, h)
			dumpOnFail(t, d, sipp)
			dir := t.TempDir()
			// The caller hangs up when its file ends: with 1, well after
			// the bridge (the human's leg must follow: sipp waits for its
			// BYE); with 2, after the agent spoke again.
			length := map[string]time.Duration{"1": 13 * time.Second, "2": 20 * time.Second}[key]
			src := writeWAV(t, dir, "caller.wav", silencePCM(length))
			caller := startBaresip(t, "caller", src, "sip:"+number+"@"+d.App.SIPAddr().String(), 40*time.Second)
			c := liveCall(t, d, caller.out.String)
			res := d.JSON(t, "POST", "/v1/calls/"+c.ID()+"/transfer", d.OwnerKey, map[string]any{
				"target_uri": uri, "mode": "warm", "briefing": "A caller asks about an order."}, 202)
			id := res["transfer_id"].(string)
			want := map[string]string{"1": "bridged", "2": "declined"}[key]
			rec := waitRecord(t, d, c.ID(), 30*time.Second, func(r map[string]any) bool {
				tr, _ := r["transfers"].([]any)
				return len(tr) == 1 && tr[0].(map[string]any)["outcome"] != nil
			})
			tr := recordTransfer(t, rec, id)
			require.Equal(t, want, tr["outcome"], "steps %v", transferSteps(rec))
			if key == "2" {
				require.Contains(t, tr["reason"], "pressed 2")
				// The agent says so: the model's answer is in the transcript.
				rec = waitRecord(t, d, c.ID(), 20*time.Second, func(r map[string]any) bool {
					return strings.Contains(fmt.Sprint(r["transcript"]), "declined")
				})
			}
			requireNoCalls(t, d)
			sipp.wait(t, 10*time.Second)
			pcm := caller.heard(t)
			heard := classify(pcm)
			t.Logf("caller heard: %s", heard)
			// First the hold music (at least 2 s of it, and it is the
			// music, not the agent or silence).
			music := strings.Index(heard, strings.Repeat(heardOther, 20))
			require.GreaterOrEqual(t, music, 0, "no hold music")
			end := music + len(heard[music:]) - len(strings.TrimLeft(heard[music:], heardOther))
			// The agent may speak the moment the music stops, with no
			// silence between: the hold ends where 2 s windows stop
			// sounding like the music.
			for w := music + 20; w <= end; w += 5 {
				if musicMatch(pcm[(w-20)*800:w*800]) < 0.6 {
					end = w - 20
					break
				}
			}
			m := musicMatch(pcm[music*800 : end*800])
			t.Logf("hold audio vs the hold music: %.2f (%d ms)", m, (end-music)*100)
			require.Greater(t, m, 0.75, "the caller's hold audio is not the hold music")
			after := heard[end:]
			if key == "1" {
				require.Contains(t, after, strings.Repeat(heardHuman, 10), "the caller never heard the human")
			} else {
				// Then the agent telling them: speech, not the music.
				require.NotContains(t, after, heardHuman)
				agent := strings.Index(after, strings.Repeat(heardOther, 20))
				require.GreaterOrEqual(t, agent, 0, "the caller never heard the agent again")
				seg := pcm[(end+agent)*800 : (end+agent+20)*800]
				a := musicMatch(seg)
				t.Logf("after the decline vs the hold music: %.2f", a)
				require.Less(t, a, 0.6, "the caller still hears the music after the decline")
				// The music stops when the caller is put back; how long until
				// the agent's voice (the echo engine speaks the system
				// message with the TTS engine).
				back := gapAfterMS(pcm, (end-1)*800)
				t.Logf("decline to the agent speaking again: %d ms of silence after the music", back)
				require.GreaterOrEqual(t, back, 0)
				require.Less(t, back, 1000, "the caller waited more than a second for the agent")
			}
			require.Zero(t, d.App.RTPPortsInUse())
		})
	}
}

// TestTransferDialOutcomes: a human who is busy, declines or does not
// answer within timeout_s leaves the caller with the agent, which says
// so; the record has the outcome and its SIP status.
func TestTransferDialOutcomes(t *testing.T) {
	t.Parallel()
	cases := []struct {
		h       human
		timeout int
		outcome string
		status  float64
	}{
		{human{Name: "busy", Status: 486, Reason: "Busy Here"}, 0, "busy", 486},
		{human{Name: "decline", Status: 603, Reason: "Decline"}, 0, "declined", 603},
		{human{Name: "noanswer", NoAnswer: true}, 5, "no_answer", 0},
	}
	for _, tc := range cases {
		t.Run(tc.outcome, func(t *testing.T) {
			t.Parallel() // each outcome has a daemon of its own
			d := callDaemon(t, nil)
			number := transferAgent(t, d, "+14155557303")
			uri, sipp := startHuman(t, tc.h)
			dumpOnFail(t, d, sipp)
			peer := newRTPPeer(t)
			ctx, cancel := context.WithTimeout(context.Background(), 40*time.Second)
			defer cancel()
			out, err := siptest.NewSoftphone(t).Dial(ctx, sip.DialRequest{Target: d.App.SIPAddr().String(), To: number,
				RTPAddr: netip.AddrPortFrom(netip.MustParseAddr("127.0.0.1"), uint16(peer.port())), Codecs: []sip.Codec{sip.PCMU}})
			require.NoError(t, err)
			c := liveCall(t, d)
			body := map[string]any{"target_uri": uri, "mode": "bridge"}
			if tc.timeout > 0 {
				body["timeout_s"] = tc.timeout
			}
			id := d.JSON(t, "POST", "/v1/calls/"+c.ID()+"/transfer", d.OwnerKey, body, 202)["transfer_id"].(string)
			rec := waitRecord(t, d, c.ID(), 20*time.Second, func(r map[string]any) bool {
				tr, _ := r["transfers"].([]any)
				return len(tr) == 1 && tr[0].(map[string]any)["outcome"] != nil
			})
			tr := recordTransfer(t, rec, id)
			require.Equal(t, tc.outcome, tr["outcome"])
			if tc.status != 0 {
				require.Equal(t, tc.status, tr["sip_status"])
			}
			// Back with the agent, who says so.
			waitRecord(t, d, c.ID(), 20*time.Second, func(r map[string]any) bool {
				return strings.Contains(fmt.Sprint(r["transcript"]), "did not go through")
			})
			require.NoError(t, out.Hangup(ctx, "done"))
			requireNoCalls(t, d)
			sipp.wait(t, 10*time.Second)
			require.Zero(t, d.App.RTPPortsInUse())
		})
	}
}
