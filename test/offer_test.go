package test

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"text/template"
	"time"

	"github.com/stretchr/testify/require"

	"switchboard/sipleg"
)

// offerScenario fills sip/testdata/sipp/offer.xml.tmpl (the sip
// package's offer/answer interop scenario, shared with its tests).
type offerScenario struct {
	Name              string
	Delayed, Rel      bool
	PT                int
	Codec             string
	Port              string
	Ptime, PauseMs    int
	Play              string
	BadRAck, NoAnswer bool
	Rtpmap, Offered   string
}

// TestOfferAnswerInterop: callers some PBXs and carrier SBCs put through
// connect and hear the echo of their speech: a delayed offer (INVITE
// without SDP: the appliance offers in the 200 OK, sipp answers in the
// ACK), an INVITE requiring 100rel (a reliable 180 PRACKed before the
// 200), and both at once (the offer in the reliable 180, the answer in
// the PRACK). A delayed offer's offer lists the number's codecs in the
// order inbound offers are negotiated (Opus, G.722, PCMU, PCMA by
// default), and the call runs in the one the answer chose.
func TestOfferAnswerInterop(t *testing.T) {
	d := callDaemon(t, nil)
	for _, sc := range []offerScenario{
		{Name: "delayed_offer", Delayed: true},
		{Name: "require_100rel", Rel: true},
		{Name: "delayed_offer_100rel", Delayed: true, Rel: true},
	} {
		t.Run(sc.Name, func(t *testing.T) {
			peer := newRTPPeer(t)
			sc.PT, sc.Codec, sc.Port, sc.Ptime, sc.PauseMs, sc.Play = 8, "PCMA", fmt.Sprint(peer.port()), 30, 4000, g711aPcap
			if sc.Delayed {
				sc.Offered = "m=audio [0-9]+ RTP/AVP 111 9 0 8 101"
			}
			tmpl, err := template.ParseFiles(filepath.Join("..", "sip", "testdata", "sipp", "offer.xml.tmpl"))
			require.NoError(t, err)
			var buf bytes.Buffer
			require.NoError(t, tmpl.Execute(&buf, sc))
			file := filepath.Join(t.TempDir(), "offer.xml")
			require.NoError(t, os.WriteFile(file, buf.Bytes(), 0o600))
			done := make(chan sippResult, 1)
			go func() { done <- runSipp(t, d.App.SIPAddr(), file, "14155550150") }()

			c := liveCall(t, d)
			(<-done).requireOK(t)
			requireNoCalls(t, d)
			in := c.Leg().(*sipleg.Leg).SIP()
			require.Equal(t, sc.Delayed, in.DelayedOffer())
			require.Equal(t, sc.Rel, in.ReliableProvisional())
			require.Equal(t, "PCMA", in.Media().Codec.Name, "the caller's answer chose PCMA")

			got := peer.received()
			require.Greater(t, len(got), 100, "the caller's media address (from its answer) received the appliance's RTP")
			require.Equal(t, uint8(8), got[len(got)-1].hdr.PayloadType, "sent in PCMA")
			ref, err := readPcapG711(g711aPcap)
			require.NoError(t, err)
			ref = ref[:3600*8]
			heard := streamPCM(got)
			windows, matched, median := echoWindows(ref, heard, 0, 2*8000, 0.7)
			rev := slices.Clone(ref)
			slices.Reverse(rev)
			ctlWindows, ctlMatched, _ := echoWindows(rev, heard, 0, 2*8000, 0.7)
			t.Logf("echo: %d/%d speech windows matched, median lag %v; reversed control %d/%d", matched, windows,
				time.Duration(median)*time.Second/8000, ctlMatched, ctlWindows)
			requireEcho(t, 5, windows, matched, median, ctlWindows, ctlMatched)
		})
	}
}
