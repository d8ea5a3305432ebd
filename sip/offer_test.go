package sip

import (
	"bytes"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"text/template"
	"time"

	"github.com/emiago/sipgo/sip"
	"github.com/stretchr/testify/require"
)

// offerCase fills testdata/sipp/offer.xml.tmpl.
type offerCase struct {
	Name         string
	Delayed, Rel bool
	PT           int
	Codec        string
	// Rtpmap is the rtpmap of PT in the caller's SDP (default
	// Codec/8000); Offered a regexp our offer (a delayed one) matches.
	Rtpmap, Offered string
	Port            string
	Ptime, PauseMs  int
	Play            string
	// BadRAck sends a PRACK that matches nothing first (481 expected);
	// NoAnswer sends the ACK of a delayed offer without SDP (a BYE is
	// expected).
	BadRAck, NoAnswer bool
}

func renderOffer(t *testing.T, c offerCase) string {
	t.Helper()
	tmpl, err := template.ParseFiles(filepath.Join("testdata", "sipp", "offer.xml.tmpl"))
	require.NoError(t, err)
	var buf bytes.Buffer
	require.NoError(t, tmpl.Execute(&buf, c))
	path := filepath.Join(t.TempDir(), c.Name+".xml")
	require.NoError(t, os.WriteFile(path, buf.Bytes(), 0o600))
	return path
}

// TestSippOfferAnswerInterop: a delayed offer (our offer in the 200 OK,
// the answer in the ACK), an INVITE requiring 100rel (a reliable 180 with
// RSeq, PRACKed before the 200), and both at once (our offer in the
// reliable 180, the answer in the PRACK, no SDP in the 200).
func TestSippOfferAnswerInterop(t *testing.T) {
	cases := []offerCase{
		{Name: "delayed_offer", Delayed: true},
		{Name: "require_100rel", Rel: true},
		{Name: "delayed_offer_100rel", Delayed: true, Rel: true},
		{Name: "prack_matching_nothing", Rel: true, BadRAck: true},
	}
	for _, transport := range []string{"u1", "t1"} {
		for _, c := range cases {
			t.Run(transport+"/"+c.Name, func(t *testing.T) {
				c.PT, c.Codec, c.Port, c.Ptime, c.PauseMs = 8, "PCMA", "40000", 30, 200
				h := newAnsweringHandler()
				srv := startServer(t, Options{}, h)
				target := srv.UDPAddr()
				if transport == "t1" {
					target = srv.TCPAddr()
				}
				out, err := runSipp(t, target, transport, renderOffer(t, c), "15551230000")
				requireSipp(t, out, err)
				r := h.next(t)
				require.NoError(t, r.err)
				require.ErrorIs(t, r.cause, ErrRemoteBye)
				require.Equal(t, c.Delayed, r.call.DelayedOffer())
				require.Equal(t, c.Rel, r.call.ReliableProvisional())
				m := r.call.Media()
				require.Equal(t, "PCMA", m.Codec.Name, "the caller's answer (or offer) chose PCMA")
				require.Equal(t, uint8(101), m.DTMFPayloadType)
				require.Equal(t, 30*time.Millisecond, m.Ptime)
				require.Equal(t, "127.0.0.1:40000", m.RemoteAddr.String())
				require.Eventually(t, func() bool { return srv.ActiveCalls() == 0 }, 2*time.Second, 10*time.Millisecond)
			})
		}
	}
}

// TestSippDelayedOfferNumberCodecs: our offer to an INVITE without SDP
// lists the number's codecs in its order (by default Opus, G.722, PCMU,
// PCMA), and the call takes the one the caller's answer in the ACK
// chooses, wideband ones included.
func TestSippDelayedOfferNumberCodecs(t *testing.T) {
	for _, c := range []struct {
		number, offered string
		answer          offerCase
		codec           string
	}{
		{openNumber, "m=audio [0-9]+ RTP/AVP 111 9 0 8 101", offerCase{PT: 111, Codec: "opus", Rtpmap: "opus/48000/2"}, "opus"},
		{openNumber, "a=rtpmap:111 opus/48000/2", offerCase{PT: 9, Codec: "G722"}, "G722"},
		{wideNumber, "m=audio [0-9]+ RTP/AVP 9 0 101", offerCase{PT: 9, Codec: "G722"}, "G722"},
		{wideNumber, "m=audio [0-9]+ RTP/AVP 9 0 101", offerCase{PT: 0, Codec: "PCMU"}, "PCMU"},
	} {
		t.Run(c.number+"/"+c.codec, func(t *testing.T) {
			h := newAnsweringHandler()
			srv := startServer(t, Options{}, h)
			oc := c.answer
			oc.Name, oc.Delayed, oc.Offered, oc.Port, oc.Ptime, oc.PauseMs = "delayed_"+c.codec, true, c.offered, "40000", 20, 200
			out, err := runSipp(t, srv.UDPAddr(), "u1", renderOffer(t, oc), strings.TrimPrefix(c.number, "+"))
			requireSipp(t, out, err)
			r := h.next(t)
			require.NoError(t, r.err)
			require.Equal(t, c.codec, r.call.Media().Codec.Name, "the caller's answer chose it")
			require.Equal(t, uint8(101), r.call.Media().DTMFPayloadType)
		})
	}
}

// TestOfferCodecs: our offers follow the number's codecs; a name that is
// not a codec is an error, not a shorter offer.
func TestOfferCodecs(t *testing.T) {
	got, err := offerCodecs(nil)
	require.NoError(t, err)
	require.Equal(t, []Codec{Opus, G722, PCMU, PCMA}, got)
	got, err = offerCodecs([]string{"pcma", "OPUS"})
	require.NoError(t, err)
	require.Equal(t, []Codec{PCMA, Opus}, got)
	_, err = offerCodecs([]string{"G729"})
	require.ErrorIs(t, err, errNoCommonCodec)
	require.ErrorContains(t, err, `"G729"`)
}

// TestSippDelayedOfferWithoutAnswer: an ACK without the answer to our
// offer ends the call with a BYE saying why.
func TestSippDelayedOfferWithoutAnswer(t *testing.T) {
	h := newAnsweringHandler()
	srv := startServer(t, Options{}, h)
	c := offerCase{Name: "no_answer", Delayed: true, NoAnswer: true, PT: 8, Codec: "PCMA", Port: "40000", Ptime: 20}
	out, err := runSipp(t, srv.UDPAddr(), "u1", renderOffer(t, c), "15551230000")
	requireSipp(t, out, err)
	r := h.next(t)
	require.ErrorIs(t, r.err, ErrNoAnswer)
	require.Eventually(t, func() bool { return srv.ActiveCalls() == 0 }, 2*time.Second, 10*time.Millisecond)
}

// TestInviteBodyNotSDP: a body that is not SDP is refused 415 with
// Accept: application/sdp (RFC 3261 section 21.4.13), not mistaken for a
// delayed offer.
func TestInviteBodyNotSDP(t *testing.T) {
	h := newAnsweringHandler()
	srv := startServer(t, Options{}, h)
	conn, err := net.DialUDP("udp", nil, net.UDPAddrFromAddrPort(srv.UDPAddr()))
	require.NoError(t, err)
	defer conn.Close()
	port := conn.LocalAddr().(*net.UDPAddr).Port
	msg := strings.Replace(invite(port, openNumber, ""), "Content-Type: application/sdp", "Content-Type: text/plain", 1)
	_, err = conn.Write([]byte(msg))
	require.NoError(t, err)
	var final string
	for {
		require.NoError(t, conn.SetReadDeadline(time.Now().Add(2*time.Second)))
		buf := make([]byte, 4096)
		n, err := conn.Read(buf)
		require.NoError(t, err, "no final response")
		if r := string(buf[:n]); !strings.HasPrefix(r, "SIP/2.0 100") {
			final = r
			break
		}
	}
	require.True(t, strings.HasPrefix(final, "SIP/2.0 415"), final)
	require.Contains(t, final, "Accept: application/sdp")
	require.Empty(t, h.results)
}

func TestParseRAck(t *testing.T) {
	for _, tc := range []struct {
		in         string
		rseq, cseq uint32
		method     string
		ok         bool
	}{
		{"776656 1 INVITE", 776656, 1, "INVITE", true},
		{" 1  314159 INVITE ", 1, 314159, "INVITE", true},
		{"0 1 INVITE", 0, 0, "", false},
		{"1 INVITE", 0, 0, "", false},
		{"x 1 INVITE", 0, 0, "", false},
		{"1 99999999999 INVITE", 0, 0, "", false},
	} {
		req := sip.NewRequest(sip.PRACK, sip.Uri{Host: "127.0.0.1"})
		req.AppendHeader(sip.NewHeader("RAck", tc.in))
		rseq, cseq, method, ok := parseRAck(req)
		require.Equal(t, tc.ok, ok, tc.in)
		if ok {
			require.Equal(t, []any{tc.rseq, tc.cseq, tc.method}, []any{rseq, cseq, method}, tc.in)
		}
	}
}
