package rtc

import (
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

const offerHead = "v=0\r\no=- 1 1 IN IP4 127.0.0.1\r\ns=-\r\nt=0 0\r\n"

func TestChooseCodec(t *testing.T) {
	for _, tc := range []struct {
		name, sdp string
		opus      bool
		err       bool
	}{
		{"opus and pcmu", offerHead + "m=audio 9 UDP/TLS/RTP/SAVPF 111 0\r\na=rtpmap:111 opus/48000/2\r\na=rtpmap:0 PCMU/8000\r\n", true, false},
		{"pcmu first still opus", offerHead + "m=audio 9 UDP/TLS/RTP/SAVPF 0 111\r\na=rtpmap:0 PCMU/8000\r\na=rtpmap:111 OPUS/48000/2\r\n", true, false},
		{"pcmu static, no rtpmap", offerHead + "m=audio 9 UDP/TLS/RTP/SAVPF 0\r\n", false, false},
		{"g722 only", offerHead + "m=audio 9 UDP/TLS/RTP/SAVPF 9\r\na=rtpmap:9 G722/8000\r\n", false, true},
		{"video only", offerHead + "m=video 9 UDP/TLS/RTP/SAVPF 96\r\na=rtpmap:96 VP8/90000\r\n", false, true},
		{"not sdp", "hello", false, true},
		{"too large", offerHead + strings.Repeat("a=x:y\r\n", 20000), false, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := chooseCodec(tc.sdp)
			if tc.err {
				require.True(t, errors.Is(err, ErrBadOffer), "%v", err)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tc.opus, c.opus)
		})
	}
}

// FuzzChooseCodec: any offer body is either refused with ErrBadOffer or
// gives a codec; nothing panics.
func FuzzChooseCodec(f *testing.F) {
	f.Add(offerHead + "m=audio 9 UDP/TLS/RTP/SAVPF 111 0\r\na=rtpmap:111 opus/48000/2\r\n")
	f.Add(offerHead + "m=audio 9 RTP/AVP 0\r\n")
	f.Add("v=0\r\nm=audio")
	f.Fuzz(func(t *testing.T, offer string) {
		if _, err := chooseCodec(offer); err != nil && !errors.Is(err, ErrBadOffer) {
			t.Fatalf("unexpected error kind: %v", err)
		}
	})
}
