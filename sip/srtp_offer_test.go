package sip

import (
	"encoding/base64"
	"net/netip"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestOfferCrypto: a placed call's offer carries a key per suite (RTP/SAVP
// when SRTP is required, RTP/AVP with keys when optional), only over
// signalling that may carry them; the answer's crypto line picks one of
// our tags and gives its key; an answer that drops SRTP from a SAVP offer,
// or names a suite we did not offer, is refused.
func TestOfferCrypto(t *testing.T) {
	_, err := placeCrypto(srtpRules{policy: SRTPRequired, keysOK: false})
	require.ErrorIs(t, err, errSRTPPlain)
	sec, err := placeCrypto(srtpRules{policy: SRTPOptional, keysOK: false})
	require.NoError(t, err)
	require.Nil(t, sec, "no keys over plain signalling")
	sec, err = placeCrypto(srtpRules{policy: SRTPOff, keysOK: true})
	require.NoError(t, err)
	require.Nil(t, sec)

	for _, required := range []bool{true, false} {
		sec, err = placeCrypto(srtpRules{policy: map[bool]SRTPPolicy{true: SRTPRequired, false: SRTPOptional}[required], keysOK: true})
		require.NoError(t, err)
		body, err := newLocalSDP(1).offer(netip.MustParseAddrPort("127.0.0.1:4000"), []Codec{PCMU}, 101, defaultPtime, SendRecv, sec)
		require.NoError(t, err)
		proto := map[bool]string{true: "RTP/SAVP", false: "RTP/AVP"}[required]
		require.Contains(t, string(body), "m=audio 4000 "+proto+" 0 101")
		require.Contains(t, string(body), "a=crypto:1 AES_CM_128_HMAC_SHA1_80 inline:")
		require.Contains(t, string(body), "a=crypto:2 AES_CM_128_HMAC_SHA1_32 inline:")

		theirs := make([]byte, 30)
		for i := range theirs {
			theirs[i] = byte(i)
		}
		answer := func(proto, crypto string) []byte {
			s := "v=0\r\no=- 1 1 IN IP4 127.0.0.1\r\ns=-\r\nc=IN IP4 127.0.0.1\r\nt=0 0\r\nm=audio 5000 " + proto + " 0\r\na=rtpmap:0 PCMU/8000\r\n"
			if crypto != "" {
				s += "a=crypto:" + crypto + "\r\n"
			}
			return []byte(s)
		}
		key := base64.StdEncoding.EncodeToString(theirs)
		got, err := sec.answered(answer("RTP/SAVP", "2 AES_CM_128_HMAC_SHA1_32 inline:"+key))
		require.NoError(t, err)
		require.Equal(t, 2, got.Tag)
		require.Equal(t, "AES_CM_128_HMAC_SHA1_32", got.Suite)
		require.Equal(t, string(theirs), got.Remote)
		require.Equal(t, string(sec.keys[1].key), got.Local, "our key of that tag")
		require.True(t, strings.Contains(string(body), base64.StdEncoding.EncodeToString(sec.keys[1].key)))

		_, err = sec.answered(answer("RTP/SAVP", "1 AES_CM_128_HMAC_SHA1_32 inline:"+key))
		require.ErrorIs(t, err, errCryptoSuite, "tag 1 was offered with another suite")
		got, err = sec.answered(answer("RTP/AVP", ""))
		if required {
			require.ErrorIs(t, err, errSRTPNeeded, "a SAVP offer answered in plain RTP")
		} else {
			require.NoError(t, err, "best effort: plain RTP is an answer")
			require.False(t, got.Active())
		}
	}
}

// TestTrunkURISchemes: sips: and ;transport=tls are TLS trunks; a sips:
// URI naming another transport is refused.
func TestTrunkURISchemes(t *testing.T) {
	for _, ok := range []string{"sips:carrier.example", "sip:carrier.example;transport=tls", "sips:carrier.example:5061;transport=tls", "sip:127.0.0.1;transport=TCP"} {
		_, err := CheckTrunkURI(ok)
		require.NoError(t, err, ok)
	}
	for _, bad := range []string{"sips:carrier.example;transport=udp", "sip:carrier.example;transport=sctp", "tel:+14155550100"} {
		_, err := CheckTrunkURI(bad)
		require.Error(t, err, bad)
	}
	_, err := CheckTargetURI("sips:alice@pbx.example")
	require.NoError(t, err)
}
