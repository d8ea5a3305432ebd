package sip

import (
	"flag"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

var update = flag.Bool("update", false, "rewrite golden files in testdata")

// TestSDPAnswerGolden negotiates every testdata/sdp/*.offer.sdp and
// compares our answer (or the error) with *.answer.sdp.
func TestSDPAnswerGolden(t *testing.T) {
	offers, err := filepath.Glob(filepath.Join("testdata", "sdp", "*.offer.sdp"))
	require.NoError(t, err)
	require.NotEmpty(t, offers)
	for _, path := range offers {
		name := strings.TrimSuffix(filepath.Base(path), ".offer.sdp")
		t.Run(name, func(t *testing.T) {
			offer, err := os.ReadFile(path)
			require.NoError(t, err)
			var got string
			p, err := parseSDP(offer)
			require.NoError(t, err)
			params, err := p.negotiate(nil)
			if err != nil {
				got = "error: " + err.Error() + "\n"
			} else {
				l := newLocalSDP(1700000000)
				body, err := l.answer(p, params, netip.MustParseAddrPort("198.51.100.5:20000"), netip.Addr{}, params.Direction.Reverse())
				require.NoError(t, err)
				got = "# " + params.String() + "\n" + string(body)
			}
			golden := filepath.Join("testdata", "sdp", name+".answer.sdp")
			if *update {
				require.NoError(t, os.WriteFile(golden, []byte(got), 0o644))
			}
			want, err := os.ReadFile(golden)
			require.NoError(t, err, "run go test -update to create golden files")
			require.Equal(t, string(want), got)
		})
	}
}

func TestNegotiate(t *testing.T) {
	offer := "v=0\r\no=- 1 1 IN IP4 192.0.2.10\r\ns=-\r\nc=IN IP4 192.0.2.10\r\nt=0 0\r\nm=audio 4000 RTP/AVP 8 0 101\r\na=rtpmap:101 telephone-event/8000\r\na=ptime:%s\r\n"
	for _, tc := range []struct {
		ptime string
		want  time.Duration
	}{{"20", 20 * time.Millisecond}, {"10", 10 * time.Millisecond}, {"5", 10 * time.Millisecond}, {"60", 60 * time.Millisecond}, {"120", 60 * time.Millisecond}, {"30", 30 * time.Millisecond}, {"x", 20 * time.Millisecond}} {
		p, err := parseSDP([]byte(strings.Replace(offer, "%s", tc.ptime, 1)))
		require.NoError(t, err)
		m, err := p.negotiate(nil)
		require.NoError(t, err)
		require.Equal(t, tc.want, m.Ptime, tc.ptime)
		require.Equal(t, PCMA, m.Codec) // static 8 without rtpmap, caller's first
		require.Equal(t, uint8(101), m.DTMFPayloadType)
		require.Equal(t, "192.0.2.10:4000", m.RemoteAddr.String())
	}
}

func TestLocalSDPVersion(t *testing.T) {
	p, err := parseSDP([]byte("v=0\r\no=- 1 1 IN IP4 192.0.2.10\r\ns=-\r\nc=IN IP4 192.0.2.10\r\nt=0 0\r\nm=audio 4000 RTP/AVP 0\r\n"))
	require.NoError(t, err)
	params, err := p.negotiate(nil)
	require.NoError(t, err)
	l := newLocalSDP(42)
	local := netip.MustParseAddrPort("198.51.100.5:20000")
	a1, err := l.answer(p, params, local, netip.Addr{}, SendRecv)
	require.NoError(t, err)
	a2, err := l.answer(p, params, local, netip.Addr{}, SendRecv)
	require.NoError(t, err)
	require.Equal(t, a1, a2, "unchanged answer keeps its version")
	require.Contains(t, string(a1), "o=- 42 42 IN IP4")
	a3, err := l.answer(p, params, local, netip.Addr{}, RecvOnly)
	require.NoError(t, err)
	require.Contains(t, string(a3), "o=- 42 43 IN IP4")
	require.Contains(t, string(a3), "a=recvonly")
}

func FuzzSDPNegotiate(f *testing.F) {
	files, _ := filepath.Glob(filepath.Join("testdata", "sdp", "*.offer.sdp"))
	for _, p := range files {
		b, _ := os.ReadFile(p)
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		p, err := parseSDP(body)
		if err != nil {
			return
		}
		params, err := p.negotiate(nil)
		if err != nil {
			return
		}
		if params.Ptime < minPtime || params.Ptime > maxPtime {
			t.Fatalf("ptime %s out of range", params.Ptime)
		}
		l := newLocalSDP(1)
		ans, err := l.answer(p, params, netip.MustParseAddrPort("127.0.0.1:20000"), netip.Addr{}, params.Direction.Reverse())
		if err != nil {
			return
		}
		// Our own answer must parse and negotiate to the same codec.
		back, err := answerMatch(ans, []Codec{params.Codec})
		if err != nil {
			t.Fatalf("own answer unusable: %v\n%s", err, ans)
		}
		if back.Codec.Name != params.Codec.Name {
			t.Fatalf("codec %s became %s", params.Codec.Name, back.Codec.Name)
		}
	})
}

func BenchmarkNegotiateAndAnswer(b *testing.B) {
	offer, err := os.ReadFile(filepath.Join("testdata", "sdp", "pcmu_first.offer.sdp"))
	require.NoError(b, err)
	local := netip.MustParseAddrPort("198.51.100.5:20000")
	b.ReportAllocs()
	for b.Loop() {
		p, _ := parseSDP(offer)
		params, _ := p.negotiate(nil)
		_, _ = newLocalSDP(1).answer(p, params, local, netip.Addr{}, SendRecv)
	}
}

// TestNegotiateCodecPreference: without a preference the best codec both
// sides have wins (G.722, else the offerer's first G.711); a number's
// preference orders and restricts the choice.
func TestNegotiateCodecPreference(t *testing.T) {
	offer := "v=0\r\no=- 1 1 IN IP4 192.0.2.10\r\ns=-\r\nc=IN IP4 192.0.2.10\r\nt=0 0\r\nm=audio 4000 RTP/AVP %s\r\n" +
		"a=rtpmap:0 PCMU/8000\r\na=rtpmap:8 PCMA/8000\r\na=rtpmap:9 G722/8000\r\n"
	for _, tc := range []struct {
		formats string
		prefs   []string
		want    string
	}{
		{"0 8 9", nil, "G722"},
		{"8 0", nil, "PCMA"},
		{"0 8 9", []string{"PCMU", "G722"}, "PCMU"},
		{"9 8", []string{"pcmu", "g722"}, "G722"},
		{"9", []string{"PCMU", "PCMA"}, ""},
	} {
		p, err := parseSDP([]byte(fmt.Sprintf(offer, tc.formats)))
		require.NoError(t, err)
		params, err := p.negotiate(tc.prefs)
		if tc.want == "" {
			require.ErrorIs(t, err, errNoCommonCodec)
			continue
		}
		require.NoError(t, err)
		require.Equal(t, tc.want, params.Codec.Name, "%s %v", tc.formats, tc.prefs)
	}
}

// TestNegotiateOpus: Opus wins by default over G.722 and G.711, at the
// offerer's dynamic payload type with its fmtp; a number's preference
// orders and restricts it like any codec (a number that prefers PCMU gets
// PCMU while Opus is offered); telephone-event follows the codec's clock.
func TestNegotiateOpus(t *testing.T) {
	offer := "v=0\r\no=- 1 1 IN IP4 192.0.2.10\r\ns=-\r\nc=IN IP4 192.0.2.10\r\nt=0 0\r\nm=audio 4000 RTP/AVP %s\r\n" +
		"a=rtpmap:0 PCMU/8000\r\na=rtpmap:9 G722/8000\r\na=rtpmap:102 opus/48000/2\r\na=fmtp:102 useinbandfec=1; maxplaybackrate=16000\r\n" +
		"a=rtpmap:101 telephone-event/8000\r\na=rtpmap:103 telephone-event/48000\r\n"
	for _, tc := range []struct {
		formats  string
		prefs    []string
		want     string
		dtmf     uint8
		dtmfRate uint32
	}{
		{"0 9 102 101 103", nil, "opus", 103, 48000},
		{"0 9 102 101", nil, "opus", 101, 8000}, // only telephone-event/8000 offered: its clock
		{"0 9 101 103", nil, "G722", 101, 8000},
		{"0 102 101 103", []string{"PCMU", "OPUS"}, "PCMU", 101, 8000},
		{"102 0 101", []string{"opus", "pcmu"}, "opus", 101, 8000},
		{"102 9", []string{"G722", "OPUS"}, "G722", 0, 0},
		{"102", []string{"PCMU"}, "", 0, 0},
	} {
		p, err := parseSDP([]byte(fmt.Sprintf(offer, tc.formats)))
		require.NoError(t, err)
		params, err := p.negotiate(tc.prefs)
		if tc.want == "" {
			require.ErrorIs(t, err, errNoCommonCodec)
			continue
		}
		require.NoError(t, err, "%s %v", tc.formats, tc.prefs)
		require.Equal(t, tc.want, params.Codec.Name, "%s %v", tc.formats, tc.prefs)
		require.Equal(t, tc.dtmf, params.DTMFPayloadType, "%s %v", tc.formats, tc.prefs)
		require.Equal(t, tc.dtmfRate, params.DTMFClockRate, "%s %v", tc.formats, tc.prefs)
		if tc.want == "opus" {
			require.Equal(t, uint8(102), params.Codec.PayloadType)
			v, ok := params.Codec.FormatParam("MaxPlaybackRate")
			require.True(t, ok)
			require.Equal(t, "16000", v)
			require.Equal(t, 48000, params.Codec.AudioRate())
		}
	}
}

// TestNegotiateKeepsTheCallsRate: a re-offer is negotiated among the
// codecs of the call's audio rate, so a G.711 call re-offered Opus and
// G.711 stays on G.711, and one offered only another rate is refused.
func TestNegotiateKeepsTheCallsRate(t *testing.T) {
	offer := "v=0\r\no=- 1 1 IN IP4 192.0.2.10\r\ns=-\r\nc=IN IP4 192.0.2.10\r\nt=0 0\r\nm=audio 4000 RTP/AVP %s\r\n" +
		"a=rtpmap:8 PCMA/8000\r\na=rtpmap:9 G722/8000\r\na=rtpmap:96 opus/48000/2\r\n"
	for _, tc := range []struct {
		formats string
		rate    int
		want    string
	}{
		{"96 9 8", 8000, "PCMA"},
		{"96 9 8", 16000, "G722"},
		{"96 9 8", 48000, "opus"},
		{"96", 8000, ""},
		{"8", 48000, ""},
	} {
		p, err := parseSDP([]byte(fmt.Sprintf(offer, tc.formats)))
		require.NoError(t, err)
		params, err := p.negotiateAt(nil, tc.rate)
		if tc.want == "" {
			require.ErrorIs(t, err, errNoCommonCodec)
			continue
		}
		require.NoError(t, err)
		require.Equal(t, tc.want, params.Codec.Name)
	}
}

// TestOpusAnswerRoundTrip: our Opus answer says opus/48000/2 with its
// fmtp and telephone-event at 48000, and reads back as the same codec.
func TestOpusAnswerRoundTrip(t *testing.T) {
	p, err := parseSDP([]byte("v=0\r\no=- 1 1 IN IP4 192.0.2.10\r\ns=-\r\nc=IN IP4 192.0.2.10\r\nt=0 0\r\nm=audio 4000 RTP/AVP 120 121\r\n" +
		"a=rtpmap:120 opus/48000/2\r\na=rtpmap:121 telephone-event/48000\r\na=ptime:50\r\n"))
	require.NoError(t, err)
	params, err := p.negotiate(nil)
	require.NoError(t, err)
	require.Equal(t, 20*time.Millisecond, params.Ptime, "50 ms is not an Opus frame size")
	body, err := newLocalSDP(1).answer(p, params, netip.MustParseAddrPort("127.0.0.1:20000"), netip.Addr{}, SendRecv)
	require.NoError(t, err)
	require.Contains(t, string(body), "a=rtpmap:120 opus/48000/2\r\n")
	require.Contains(t, string(body), "a=fmtp:120 useinbandfec=1;stereo=0;sprop-stereo=0;maxplaybackrate=24000;sprop-maxcapturerate=24000\r\n")
	require.Contains(t, string(body), "a=rtpmap:121 telephone-event/48000\r\n")
	back, err := answerMatch(body, []Codec{Opus})
	require.NoError(t, err)
	require.Equal(t, "opus", back.Codec.Name)
	require.Equal(t, uint8(120), back.Codec.PayloadType)
	require.Equal(t, uint32(48000), back.DTMFClockRate)
}
