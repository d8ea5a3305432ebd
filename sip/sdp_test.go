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
