package test

import (
	"encoding/json"
	"io"
	"net"
	"net/http"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pion/ice/v4"
	"github.com/pion/logging"
	"github.com/pion/webrtc/v4"
	"github.com/pion/webrtc/v4/pkg/media"
	"github.com/stretchr/testify/require"

	"switchboard/app/apptest"
	sbmedia "switchboard/media"
	"switchboard/media/opus"
)

// browserPeer is a WebRTC client (pion) standing in for a browser: it
// offers Opus and/or PCMU and the "oai-events" data channel, speaks a
// PCM stream at 24 kHz in real time and keeps what it hears.
type browserPeer struct {
	t     *testing.T
	pc    *webrtc.PeerConnection
	track *webrtc.TrackLocalStaticSample
	dc    *webrtc.DataChannel
	opus  bool

	dcOpen    chan struct{}
	connected chan struct{}

	mu     sync.Mutex
	heard  []int16 // 24 kHz
	events []map[string]any
	evCh   chan map[string]any
}

// newBrowserPeer makes the peer; withOpus false offers PCMU only. Its ICE
// stays on loopback (no mDNS, no other interface).
func newBrowserPeer(t *testing.T, withOpus bool) *browserPeer {
	t.Helper()
	me := &webrtc.MediaEngine{}
	capOpus := webrtc.RTPCodecCapability{MimeType: webrtc.MimeTypeOpus, ClockRate: 48000, Channels: 2, SDPFmtpLine: "minptime=10;useinbandfec=1"}
	capPCMU := webrtc.RTPCodecCapability{MimeType: webrtc.MimeTypePCMU, ClockRate: 8000, Channels: 1}
	if withOpus {
		require.NoError(t, me.RegisterCodec(webrtc.RTPCodecParameters{RTPCodecCapability: capOpus, PayloadType: 111}, webrtc.RTPCodecTypeAudio))
	}
	require.NoError(t, me.RegisterCodec(webrtc.RTPCodecParameters{RTPCodecCapability: capPCMU, PayloadType: 0}, webrtc.RTPCodecTypeAudio))
	var se webrtc.SettingEngine
	quiet := logging.NewDefaultLoggerFactory()
	quiet.DefaultLogLevel = logging.LogLevelDisabled
	se.LoggerFactory = quiet
	se.SetICEMulticastDNSMode(ice.MulticastDNSModeDisabled)
	se.SetNetworkTypes([]webrtc.NetworkType{webrtc.NetworkTypeUDP4})
	se.SetIncludeLoopbackCandidate(true)
	se.SetIPFilter(func(ip net.IP) bool { return ip.IsLoopback() })
	api := webrtc.NewAPI(webrtc.WithMediaEngine(me), webrtc.WithSettingEngine(se))
	pc, err := api.NewPeerConnection(webrtc.Configuration{})
	require.NoError(t, err)
	p := &browserPeer{t: t, pc: pc, opus: withOpus, dcOpen: make(chan struct{}), connected: make(chan struct{}), evCh: make(chan map[string]any, 1024)}
	t.Cleanup(func() { _ = pc.Close() })
	c := capPCMU
	if withOpus {
		c = capOpus
	}
	p.track, err = webrtc.NewTrackLocalStaticSample(c, "mic", "browser")
	require.NoError(t, err)
	_, err = pc.AddTrack(p.track)
	require.NoError(t, err)
	p.dc, err = pc.CreateDataChannel("oai-events", nil)
	require.NoError(t, err)
	var once, conn sync.Once
	p.dc.OnOpen(func() { once.Do(func() { close(p.dcOpen) }) })
	p.dc.OnMessage(func(m webrtc.DataChannelMessage) {
		var ev map[string]any
		if json.Unmarshal(m.Data, &ev) != nil {
			return
		}
		p.mu.Lock()
		p.events = append(p.events, ev)
		p.mu.Unlock()
		select {
		case p.evCh <- ev:
		default:
		}
	})
	pc.OnConnectionStateChange(func(s webrtc.PeerConnectionState) {
		if s == webrtc.PeerConnectionStateConnected {
			conn.Do(func() { close(p.connected) })
		}
	})
	pc.OnTrack(func(tr *webrtc.TrackRemote, _ *webrtc.RTPReceiver) { p.listen(tr) })
	return p
}

// offer makes the complete offer (every candidate in it).
func (p *browserPeer) offer() string {
	offer, err := p.pc.CreateOffer(nil)
	require.NoError(p.t, err)
	done := webrtc.GatheringCompletePromise(p.pc)
	require.NoError(p.t, p.pc.SetLocalDescription(offer))
	<-done
	return p.pc.LocalDescription().SDP
}

// call POSTs the offer to /v1/realtime/calls?query and applies the
// answer; it returns the response's status, headers and body.
func (p *browserPeer) call(d *apptest.Daemon, query, token string) (int, http.Header, string) {
	p.t.Helper()
	req, err := http.NewRequest("POST", d.URL+"/v1/realtime/calls"+query, strings.NewReader(p.offer()))
	require.NoError(p.t, err)
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/sdp")
	resp, err := http.DefaultClient.Do(req)
	require.NoError(p.t, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(p.t, err)
	if resp.StatusCode == http.StatusCreated {
		require.NoError(p.t, p.pc.SetRemoteDescription(webrtc.SessionDescription{Type: webrtc.SDPTypeAnswer, SDP: string(body)}))
	}
	return resp.StatusCode, resp.Header, string(body)
}

// listen decodes what the appliance sends into 24 kHz PCM.
func (p *browserPeer) listen(tr *webrtc.TrackRemote) {
	dec, err := opus.NewDecoder(24000)
	if err != nil {
		return
	}
	defer dec.Close()
	up, _ := sbmedia.NewResampler(8000, 24000)
	var pcm []int16
	for {
		pkt, _, err := tr.ReadRTP()
		if err != nil {
			return
		}
		switch pkt.PayloadType {
		case 111:
			if pcm, err = dec.Decode(pcm[:0], pkt.Payload, 0); err != nil {
				continue
			}
		case 0:
			pcm = up.Process(pcm[:0], sbmedia.PCMU.DecodeFrame(nil, pkt.Payload))
		default:
			continue
		}
		p.mu.Lock()
		p.heard = append(p.heard, pcm...)
		p.mu.Unlock()
	}
}

// speak sends pcm (24 kHz) in 20 ms frames, in real time.
func (p *browserPeer) speak(pcm []int16) {
	enc, err := opus.NewEncoder(24000, 32000)
	require.NoError(p.t, err)
	defer enc.Close()
	down, _ := sbmedia.NewResampler(24000, 8000)
	const n = 480
	next := time.Now()
	var pkt []byte
	var nb []int16
	for off := 0; off+n <= len(pcm); off += n {
		frame := pcm[off : off+n]
		if p.opus {
			pkt, err = enc.Encode(pkt[:0], frame)
			require.NoError(p.t, err)
		} else {
			nb = down.Process(nb[:0], frame)
			pkt = sbmedia.PCMU.EncodeFrame(pkt[:0], nb)
		}
		require.NoError(p.t, p.track.WriteSample(media.Sample{Data: pkt, Duration: 20 * time.Millisecond}))
		next = next.Add(20 * time.Millisecond)
		// A browser's microphone: one 20 ms frame per 20 ms of real time.
		time.Sleep(time.Until(next))
	}
}

// heardPCM returns what the peer heard so far (24 kHz).
func (p *browserPeer) heardPCM() []int16 {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]int16(nil), p.heard...)
}

// waitPlayed waits until the peer heard audio and then quiet for quiet
// (an answer or a greeting played out).
func (p *browserPeer) waitPlayed(quiet, within time.Duration) {
	p.t.Helper()
	require.Eventually(p.t, func() bool {
		pcm := p.heardPCM()
		for i := len(pcm) - 1; i >= 0; i-- {
			if pcm[i] > 1000 || pcm[i] < -1000 {
				return len(pcm)-1-i >= int(quiet*24000/time.Second)
			}
		}
		return false
	}, within, 20*time.Millisecond, "audio, then %v of quiet", quiet)
}

// nextEvent waits for a server event of type typ on the data channel.
func (p *browserPeer) nextEvent(typ string, within time.Duration) map[string]any {
	p.t.Helper()
	deadline := time.After(within)
	for {
		select {
		case ev := <-p.evCh:
			if ev["type"] == typ {
				return ev
			}
		case <-deadline:
			p.mu.Lock()
			var seen []string
			for _, e := range p.events {
				seen = append(seen, e["type"].(string))
			}
			p.mu.Unlock()
			p.t.Fatalf("no %s event within %s; saw %v", typ, within, seen)
		}
	}
}

// send sends a client event on the data channel.
func (p *browserPeer) send(ev map[string]any) {
	b, err := json.Marshal(ev)
	require.NoError(p.t, err)
	require.NoError(p.t, p.dc.SendText(string(b)))
}

// speechPCM24k renders a sentence with espeak-ng, as 24 kHz mono PCM with
// 0.3 s of silence before it.
func speechPCM24k(t *testing.T, text string) []int16 {
	t.Helper()
	for _, tool := range []string{"espeak-ng", "sox"} {
		_, err := exec.LookPath(tool)
		require.NoError(t, err, "%s must be installed (make deps)", tool)
	}
	dir := t.TempDir()
	raw, out := filepath.Join(dir, "espeak.wav"), filepath.Join(dir, "speech.wav")
	b, err := exec.Command("espeak-ng", "-w", raw, text).CombinedOutput()
	require.NoError(t, err, "%s", b)
	b, err = exec.Command("sox", raw, "-r", "24000", "-c", "1", "-b", "16", out, "pad", "0.3", "0").CombinedOutput()
	require.NoError(t, err, "%s", b)
	pcm, rate, err := readWAV(out)
	require.NoError(t, err)
	require.Equal(t, 24000, rate)
	return pcm
}

// to8k resamples 24 kHz PCM to 8 kHz for the echo matchers.
func to8k(pcm []int16) []int16 {
	rs, _ := sbmedia.NewResampler(24000, 8000)
	return rs.Process(nil, pcm)
}
