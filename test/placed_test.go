package test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/pion/rtp"
	"github.com/stretchr/testify/require"

	"switchboard/app/apptest"
	"switchboard/call"
	"switchboard/media"
	"switchboard/media/wav"
	"switchboard/sipleg"
)

// Placed calls on a par with answered ones (issue 24, item 4): the
// number's codec order in the INVITE, wideband callees, trunks over TCP
// and TLS with SRTP, session timers.

// TestPlacedCallOffersNumberCodecs: a placed call's INVITE offers the
// number's codecs in the number's order (sipp checks the m= line), by
// default Opus, G.722, PCMU, PCMA; the call takes the codec the callee's
// answer chose.
func TestPlacedCallOffersNumberCodecs(t *testing.T) {
	for _, tc := range []struct {
		name     string
		codecs   []string
		offer    string
		pt       int
		rtpmap   string
		answered string
	}{
		{"number order", []string{"G722", "PCMA"}, "m=audio [0-9]+ RTP/AVP 9 8 101", 8, "PCMA/8000", "PCMA"},
		{"default order", nil, "m=audio [0-9]+ RTP/AVP 111 9 0 8 101", 111, "opus/48000/2", "opus"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			from := "+18005550171"
			d, sipp, _, agentID := outboundSetup(t, callee{Name: "codecs", RingMs: 200, OfferRE: tc.offer, AnswerPT: tc.pt, AnswerRtpmap: tc.rtpmap,
				CalleeBye: true, TalkMs: 1500}, from)
			if tc.codecs != nil {
				d.JSON(t, "PATCH", "/v2/phone-numbers/"+numberID(t, d, from), d.OwnerKey, map[string]any{"codecs": tc.codecs}, 200)
			}
			rec := d.JSON(t, "POST", "/v1/calls", d.OwnerKey, map[string]any{"to": "+14155550171", "from": from, "agent_id": agentID}, 201)
			c := liveCall(t, d)
			require.Eventually(t, func() bool { return c.Snapshot().State == call.StateActive }, 10*time.Second, 20*time.Millisecond)
			leg := c.Leg().(*sipleg.Leg)
			require.Equal(t, tc.answered, leg.SIP().Media().Codec.Name, "the callee's answer chose it")
			sipp.wait(t, 20*time.Second)
			waitRecord(t, d, rec["call_id"].(string), 10*time.Second, func(r map[string]any) bool { return r["state"] == "ended" })
			requireNoCalls(t, d)
		})
	}
}

// TestPlacedWideband: the appliance calls baresip (auto-answer) offering
// its default codecs; baresip has only G.722, only Opus or only PCMU.
// The call is answered in that codec, and the line test echoes the
// callee's speech back: what baresip hears matches what it said, and
// keeps the speech's energy above 4 kHz on G.722 and Opus (none on PCMU),
// so the placed call's audio went wideband both ways. Answered in PCMU,
// the leg's audio becomes PCMU code words (the conversation's 24 kHz
// converted once each way, as on an answered G.711 call).
func TestPlacedWideband(t *testing.T) {
	d := callDaemon(t, nil)
	from := "+18005550172"
	agentID := lineTestAgent(t, d, from)
	for _, codec := range []string{"G722", "opus", "PCMU"} {
		t.Run(codec, func(t *testing.T) {
			p := placeToBaresip(t, d, baresipCallee{codec: codec}, from, agentID)
			require.Equal(t, codec, p.leg.SIP().Media().Codec.Name)
			rate := map[string]int{"G722": 16000, "opus": 24000, "PCMU": 24000}[codec]
			if codec == "PCMU" {
				// Answered in G.711, the leg's audio is its code words (a
				// bridge to another G.711 leg relays them).
				require.Equal(t, media.FormatPCMU, p.leg.Audio().Format(), "a placed call answered in PCMU")
			} else {
				require.Equal(t, media.PCM16(24000), p.leg.Audio().Format(), "a placed call's audio is PCM at the conversation's rate, %d Hz on the wire", rate)
			}
			p.requireEcho(t)
			switch codec {
			case "G722":
				require.Greater(t, p.heardShare, 0.5*p.saidShare, "the echo's upper band")
			case "opus":
				require.Greater(t, p.heardShare, 0.3*p.saidShare, "the echo's upper band")
			default:
				require.Less(t, p.heardShare, 0.1*p.saidShare, "a G.711 echo has no upper band")
			}
		})
	}
}

// lineTestAgent makes number a team number routed to a line-test agent
// (the loopback engine: the callee hears itself) and returns the agent.
func lineTestAgent(t *testing.T, d *apptest.Daemon, number string) string {
	t.Helper()
	ag := d.JSON(t, "POST", "/v1/agents", d.OwnerKey, map[string]any{"name": "placed line test " + number, "engine": "loopback"}, 200)
	d.JSON(t, "POST", "/v2/phone-numbers", d.OwnerKey, map[string]any{"origin": "byo_trunk", "name": "placed " + number,
		"phone_number": number, "agent_id": ag["agent_id"]}, 200)
	return ag["agent_id"].(string)
}

// baresipCallee configures baresip as the callee of a placed call.
type baresipCallee struct {
	codec     string // G722, opus or PCMU: the only codec it has
	transport string // udp (default), tcp or tls
	srtp      bool   // SDES SRTP mandatory (its srtp module)
	cert      string // its TLS certificate and key, one PEM file (tls)
}

// placed is a call placed to baresip, once it ended.
type placed struct {
	leg                   *sipleg.Leg
	c                     *call.Call
	said, heard           []int16 // 16 kHz: the speech part of what it said, all it heard
	saidShare, heardShare float64
	out                   string
}

// requireEcho checks that baresip heard its speech back from the line
// test.
func (p *placed) requireEcho(t *testing.T) {
	t.Helper()
	said8, heard8 := media.Convert(p.said, 16000, 8000), media.Convert(p.heard, 16000, 8000)
	windows, matched, median := echoWindows(said8, heard8, 0, 2*8000, 0.7)
	rev := make([]int16, len(said8))
	for i, v := range said8 {
		rev[len(said8)-1-i] = v
	}
	ctlWindows, ctlMatched, _ := echoWindows(rev, heard8, 0, 2*8000, 0.7)
	t.Logf("%s over %s: %d/%d speech windows echoed, median lag %v, control %d/%d; energy above 4 kHz: said %.4f, heard %.4f; media %+v",
		p.leg.SIP().Media().Codec.Name, p.leg.SIP().Transport(), matched, windows, time.Duration(median)*time.Second/8000, ctlMatched, ctlWindows,
		p.saidShare, p.heardShare, p.c.Snapshot().Media)
	requireEcho(t, 8, windows, matched, median, ctlWindows, ctlMatched)
}

// placeToBaresip starts baresip as the callee (it says "Hello?", waits,
// then speaks, and hangs up at the end of its file), places a call from
// from to it with agentID, and returns once the call ended.
func placeToBaresip(t *testing.T, d *apptest.Daemon, bc baresipCallee, from, agentID string) *placed {
	t.Helper()
	if bc.transport == "" {
		bc.transport = "udp"
	}
	dir := t.TempDir()
	source, said := calleeSpeech(t, dir, bc.codec)
	b := launchBaresip(t, dir, baresipConf{user: "callee", transport: bc.transport, source: source, codec: bc.codec,
		answer: true, srtp: bc.srtp, cert: bc.cert, strict: true}, "", 60*time.Second)
	buf, rec, stop, port := b.out, b.rec, b.stop, b.port
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("baresip (%s): %s\ndaemon: %s", bc.transport, tail(buf.String(), 3000), tail(d.Logs.String(), 5000))
		}
	})
	listening := fmt.Sprintf("127.0.0.1:%d", port)
	require.Eventually(t, func() bool { return strings.Contains(buf.String(), "baresip is ready") },
		10*time.Second, 50*time.Millisecond, "baresip did not start: %s", tail(buf.String(), 2000))

	scheme, host := "sip", listening
	switch bc.transport {
	case "tcp":
		host += ";transport=tcp"
	case "tls":
		host = fmt.Sprintf("127.0.0.1:%d;transport=tls", port+1)
	}
	to := fmt.Sprintf("%s:callee@%s", scheme, host)
	rec0 := d.JSON(t, "POST", "/v1/calls", d.OwnerKey, map[string]any{"to": to, "from": from, "agent_id": agentID}, 201)
	c := liveCall(t, d, func() string { return tail(buf.String(), 3000) })
	require.Eventually(t, func() bool { return d.App.Calls().Active() == 0 }, 60*time.Second, 50*time.Millisecond,
		"baresip did not hang up at the end of its file: %s", tail(buf.String(), 3000))
	waitRecord(t, d, rec0["call_id"].(string), 10*time.Second, func(r map[string]any) bool { return r["state"] == "ended" })
	stop()
	p := &placed{leg: c.Leg().(*sipleg.Leg), c: c, said: said, out: buf.String()}
	decs, err := filepath.Glob(filepath.Join(rec, "dump-*-dec.wav"))
	require.NoError(t, err)
	require.Len(t, decs, 1, "baresip's recording of the call: %s", tail(p.out, 3000))
	heard, rate, err := readWAV(decs[0])
	require.NoError(t, err)
	if rate != 16000 {
		heard = media.Convert(heard, rate, 16000)
	}
	p.heard = heard
	p.saidShare, p.heardShare = upperBandShare(said), upperBandShare(heard)
	return p
}

// calleeSpeech writes what the callee says, at the rate baresip's aufile
// plays for codec (8, 16 or 48 kHz): "Hello?", 2 s of silence (the
// opening hears a person and opens the call), speech, 2.5 s of silence.
// It returns the file and, at 16 kHz, the same audio with the hello
// silenced (the opening words never reach the conversation, so only the
// speech comes back).
func calleeSpeech(t *testing.T, dir, codec string) (string, []int16) {
	t.Helper()
	for _, tool := range []string{"espeak-ng", "sox"} {
		_, err := exec.LookPath(tool)
		require.NoError(t, err, "%s must be installed (apt install espeak-ng sox)", tool)
	}
	render := func(name, text string) []int16 {
		raw, out := filepath.Join(dir, name+"-raw.wav"), filepath.Join(dir, name+".wav")
		b, err := exec.Command("espeak-ng", "-v", "en-us+f5", "-w", raw, text).CombinedOutput()
		require.NoError(t, err, "%s", b)
		b, err = exec.Command("sox", raw, "-r", "16000", "-c", "1", "-b", "16", out).CombinedOutput()
		require.NoError(t, err, "%s", b)
		pcm, _, err := readWAV(out)
		require.NoError(t, err)
		return pcm
	}
	hello := render("hello", "Hello?")
	speech := render("speech", "This is a test of a placed wideband call. Six, seven, eight, nine, ten.")
	silence := func(s float64) []int16 { return make([]int16, int(s*16000)) }
	var all, ref []int16
	all = append(append(append(all, silence(0.5)...), hello...), silence(2)...)
	ref = append(ref, make([]int16, len(all))...)
	all, ref = append(all, speech...), append(ref, speech...)
	all, ref = append(all, silence(2.5)...), append(ref, silence(2.5)...)
	path16 := filepath.Join(dir, "callee16k.wav")
	f, err := os.Create(path16)
	require.NoError(t, err)
	w, err := wav.NewWriter(f, 16000, 1)
	require.NoError(t, err)
	require.NoError(t, w.Write(all))
	require.NoError(t, w.Close())
	require.NoError(t, f.Close())
	rate := map[string]int{"G722": 16000, "opus": 48000, "PCMU": 8000}[codec]
	if rate == 16000 {
		return path16, ref
	}
	out := filepath.Join(dir, fmt.Sprintf("callee%dk.wav", rate/1000))
	b, err := exec.Command("sox", path16, "-r", fmt.Sprint(rate), out).CombinedOutput()
	require.NoError(t, err, "%s", b)
	return out, ref
}

// TestPlacedTrunkTransports: placed calls over TCP and over TLS with SRTP
// (SDES), baresip the callee: over TCP a G.722 callee is called in plain
// RTP (SDES keys do not cross unencrypted signalling); over TLS a callee
// that requires SRTP (its srtp module, RTP/SAVP) is offered RTP/SAVP with
// our keys by a number whose srtp is required, and a capture of lo shows
// every audio packet of the call, both ways, authenticating under the
// call's keys with no payload in clear; the echo comes back both times.
// A number that requires SRTP cannot call over UDP, and an appliance
// without its own TLS listener cannot call over TLS: 409, naming why.
func TestPlacedTrunkTransports(t *testing.T) {
	dir := t.TempDir()
	cert, key := selfSignedCert(t, dir)
	calleeDir := filepath.Join(dir, "callee")
	require.NoError(t, os.MkdirAll(calleeDir, 0o700))
	calleeCert, calleeKey := selfSignedCert(t, calleeDir)
	certPEM, err := os.ReadFile(calleeCert)
	require.NoError(t, err)
	keyPEM, err := os.ReadFile(calleeKey)
	require.NoError(t, err)
	bundle := filepath.Join(calleeDir, "baresip.pem")
	require.NoError(t, os.WriteFile(bundle, append(certPEM, keyPEM...), 0o600))
	own := takePorts(t, 20)
	lo, hi := uint16(own.lo), uint16(own.hi)
	d := callDaemon(t, map[string]string{
		"SWITCHBOARD_RTP_PORTS":    fmt.Sprintf("%d-%d", lo, hi),
		"SWITCHBOARD_SIP_TLS_ADDR": "127.0.0.1:0", "SWITCHBOARD_SIP_TLS_CERT": cert, "SWITCHBOARD_SIP_TLS_KEY": key,
		"SWITCHBOARD_SIP_TLS_CA": calleeCert,
	})
	plainFrom, secureFrom := "+18005550173", "+18005550174"
	plainAgent := lineTestAgent(t, d, plainFrom)
	secureAgent := lineTestAgent(t, d, secureFrom)
	d.JSON(t, "PATCH", "/v2/phone-numbers/"+numberID(t, d, secureFrom), d.OwnerKey, map[string]any{"srtp": "required"}, 200)

	t.Run("tcp", func(t *testing.T) {
		p := placeToBaresip(t, d, baresipCallee{codec: "G722", transport: "tcp"}, plainFrom, plainAgent)
		require.Equal(t, "TCP", p.leg.SIP().Transport())
		require.Equal(t, "G722", p.leg.SIP().Media().Codec.Name)
		require.False(t, p.leg.SIP().Media().SRTP.Active(), "no SDES keys over TCP")
		p.requireEcho(t)
		require.Greater(t, p.heardShare, 0.5*p.saidShare, "the echo's upper band")
	})

	t.Run("tls srtp", func(t *testing.T) {
		sniff := newSniffer(t, lo, hi)
		p := placeToBaresip(t, d, baresipCallee{codec: "G722", transport: "tls", srtp: true, cert: bundle}, secureFrom, secureAgent)
		sniff.waitQuiet(t)
		require.Equal(t, "TLS", p.leg.SIP().Transport())
		sdes := p.leg.SIP().Media().SRTP
		require.True(t, sdes.Active(), "the call is on SRTP")
		require.Equal(t, "G722", p.leg.SIP().Media().Codec.Name)
		p.requireEcho(t)
		tx, rx := srtpContext(t, sdes.Suite, sdes.Local), srtpContext(t, sdes.Suite, sdes.Remote)
		var sent, got, sentOK, gotOK, inClear int
		for _, dg := range sniff.datagrams() {
			fromUs := dg.src >= lo && dg.src <= hi
			port := dg.dst
			if fromUs {
				port = dg.src
			}
			if port%2 != 0 || len(dg.payload) < 12 || dg.payload[0]>>6 != 2 {
				continue // RTCP, or not RTP
			}
			ctx := rx
			if fromUs {
				sent++
				ctx = tx
			} else {
				got++
			}
			var h rtp.Header
			plain, err := ctx.DecryptRTP(nil, dg.payload, &h)
			if err != nil {
				continue
			}
			if fromUs {
				sentOK++
			} else {
				gotOK++
			}
			var pk rtp.Packet
			require.NoError(t, pk.Unmarshal(plain))
			if string(dg.payload[len(plain)-len(pk.Payload):len(plain)]) == string(pk.Payload) {
				inClear++
			}
		}
		t.Logf("srtp %s over TLS: captured %d RTP packets out, %d in; %d and %d authenticated under the call's keys; %d in clear",
			sdes.Suite, sent, got, sentOK, gotOK, inClear)
		require.Greater(t, sent, 200, "RTP out captured")
		require.Greater(t, got, 200, "RTP in captured")
		require.Equal(t, sent, sentOK, "what we sent authenticates under our key")
		require.Equal(t, got, gotOK, "what baresip sent authenticates under its key")
		require.Zero(t, inClear, "no payload crosses the wire in clear")
	})

	t.Run("refusals", func(t *testing.T) {
		e := d.JSON(t, "POST", "/v1/calls", d.OwnerKey, map[string]any{"to": "sip:callee@127.0.0.1:5999", "from": secureFrom, "agent_id": secureAgent}, 409)
		require.Equal(t, "to", e["error"].(map[string]any)["param"])
		require.Contains(t, e["error"].(map[string]any)["message"], "SIP TLS")
		e = d.JSON(t, "PATCH", "/v2/phone-numbers/"+numberID(t, d, plainFrom), d.OwnerKey,
			map[string]any{"outbound_trunk": map[string]any{"uri": "sips:127.0.0.1:5999;transport=udp"}}, 400)
		require.Equal(t, "outbound_trunk.uri", e["error"].(map[string]any)["param"])
		plain := callDaemon(t, nil)
		agent := lineTestAgent(t, plain, plainFrom)
		e = plain.JSON(t, "POST", "/v1/calls", plain.OwnerKey, map[string]any{"to": "sips:callee@127.0.0.1:5999", "from": plainFrom, "agent_id": agent}, 409)
		require.Contains(t, e["error"].(map[string]any)["message"], "sip.tls_cert")
		requireNoCalls(t, d)
		requireNoCalls(t, plain)
	})
}
