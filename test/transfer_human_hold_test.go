package test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestTransferBridgeHumanHold: the human's phone, bridged to a caller,
// puts the call on hold itself (a sipp human re-INVITEs with
// a=sendonly, with a=inactive, or the old-style c=0.0.0.0), then takes
// it off hold (a=sendrecv). The appliance answers recvonly, inactive and
// inactive (sipp checks each answer), sends the human nothing while it
// holds, and plays the caller the transfer's hold audio (the music) in
// the human's place, as a PBX plays its music on hold to the other side;
// after the resume the caller hears the human and the human the caller
// again. The call record lists the hold: by the human, on the human's
// leg, as long as it lasted.
func TestTransferBridgeHumanHold(t *testing.T) {
	d := callDaemon(t, nil)
	number := transferAgent(t, d, "+14155557325")
	voice, _ := calleePcap(t, tonePCM(humanTone, 20))
	tone, _ := calleePcap(t, tonePCM(callerTone, 20))
	const holdAfter, holdFor = 3000, 4000
	for _, dir := range []string{"sendonly", "inactive", "c0"} {
		t.Run(dir, func(t *testing.T) {
			requireNoCalls(t, d)
			humanRTP, callerRTP := newRTPPeer(t), newRTPPeer(t) // what the appliance sends each of them
			uri, sipp := startHuman(t, human{Name: "hold-" + dir, RingMs: 100, Hello: voice, Port: fmt.Sprint(humanRTP.port()),
				HoldDir: dir, HoldAfterMs: holdAfter, HoldMs: holdFor})
			dumpOnFail(t, d, sipp)
			s := scenario{Name: "human-hold-" + dir, Port: fmt.Sprint(callerRTP.port()), Formats: "0 101", WantPT: 0, Ptime: 20, Status: 200,
				Rtpmaps: "      a=rtpmap:0 PCMU/8000\n      a=rtpmap:101 telephone-event/8000\n      a=fmtp:101 0-16\n",
				Play:    tone, PauseMs: 15000}
			done := make(chan sippResult, 1)
			go func() { done <- runSipp(t, d.App.SIPAddr(), render(t, "call.xml.tmpl", s), number) }()
			c := liveCall(t, d)
			bridged := bridgeTo(t, d, c.ID(), uri, nil)
			leg := bridged["transfers"].([]any)[0].(map[string]any)["leg"].(map[string]any)
			rec := waitRecord(t, d, c.ID(), 20*time.Second, func(r map[string]any) bool {
				hs, _ := r["holds"].([]any)
				return len(hs) == 1 && hs[0].(map[string]any)["resumed_at"] != nil
			})
			(<-done).requireOK(t)
			requireNoCalls(t, d)
			sipp.wait(t, 10*time.Second) // its re-INVITEs were answered as they should be
			require.Zero(t, d.App.RTPPortsInUse(), "RTP ports left")

			h := rec["holds"].([]any)[0].(map[string]any)
			require.Equal(t, "human", h["by"])
			require.Equal(t, leg["party_id"], h["party_id"])
			held, resumed := parseAt(t, h["held_at"]), parseAt(t, h["resumed_at"])
			t.Logf("the human held for %d ms (record: %v ms)", resumed.Sub(held).Milliseconds(), h["duration_ms"])
			require.InDelta(t, holdFor, h["duration_ms"], 1000)
			require.Len(t, recordEvents(rec, "hold"), 2, "the hold's entries among the events")

			// The human's side: nothing while it holds (a frame in flight
			// at each switch aside), the caller before and after.
			var sentDuring int
			var humanBefore, humanAfter []int16
			for _, p := range humanRTP.received() {
				switch {
				case p.at.Before(held):
					humanBefore = append(humanBefore, p.pcm...)
				case p.at.After(held.Add(100*time.Millisecond)) && p.at.Before(resumed):
					sentDuring++
				case p.at.After(resumed.Add(200 * time.Millisecond)):
					humanAfter = append(humanAfter, p.pcm...)
				}
			}
			require.Zero(t, sentDuring, "RTP sent to the human while its phone held the call")
			require.Contains(t, classify(humanBefore), strings.Repeat(heardCaller, 10), "the human did not hear the caller before the hold")
			require.Contains(t, classify(humanAfter), strings.Repeat(heardCaller, 10), "the human did not hear the caller after the resume")

			// The caller's side: the human, the hold music, the human.
			var before, during, after []int16
			for _, p := range callerRTP.received() {
				switch {
				case p.at.Before(held):
					before = append(before, p.pcm...)
				case p.at.After(held.Add(200*time.Millisecond)) && p.at.Before(resumed.Add(-100*time.Millisecond)):
					during = append(during, p.pcm...)
				case p.at.After(resumed.Add(200 * time.Millisecond)):
					after = append(after, p.pcm...)
				}
			}
			t.Logf("the caller heard: before %s | during %s | after %s", classify(before), classify(during), classify(after))
			require.Contains(t, classify(before), strings.Repeat(heardHuman, 10), "the caller did not hear the human before the hold")
			require.NotContains(t, classify(during), heardHuman, "the caller heard the holding human")
			require.GreaterOrEqual(t, len(during), 2*8000, "the caller heard less than 2 s during the hold")
			m := musicMatch(during)
			t.Logf("the caller's audio during the human's hold vs the hold music: %.2f", m)
			require.Greater(t, m, 0.75, "what the caller heard while the human held is not the hold music")
			require.Contains(t, classify(after), strings.Repeat(heardHuman, 10), "the caller did not hear the human after the resume")
		})
	}
}

// parseAt parses a record's timestamp.
func parseAt(t *testing.T, v any) time.Time {
	t.Helper()
	s, _ := v.(string)
	at, err := time.Parse(time.RFC3339Nano, s)
	require.NoError(t, err, "timestamp %v", v)
	return at
}
