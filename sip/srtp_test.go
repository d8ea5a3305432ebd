package sip

import (
	"context"
	"encoding/base64"
	"fmt"
	"net"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// key30 is a 30-byte AES_CM_128 master key and salt, base64.
var key30 = base64.StdEncoding.EncodeToString([]byte("0123456789abcdef0123456789abcd"))

func srtpOffer(proto string, crypto ...string) string {
	s := "v=0\r\no=- 1 1 IN IP4 192.0.2.10\r\ns=-\r\nc=IN IP4 192.0.2.10\r\nt=0 0\r\nm=audio 4000 " + proto + " 0 101\r\na=rtpmap:101 telephone-event/8000\r\n"
	for _, c := range crypto {
		s += "a=crypto:" + c + "\r\n"
	}
	return s
}

func TestParseCrypto(t *testing.T) {
	for _, tc := range []struct {
		in, suite string
		tag       int
		err       error
	}{
		{"1 AES_CM_128_HMAC_SHA1_80 inline:" + key30, "AES_CM_128_HMAC_SHA1_80", 1, nil},
		{"2 AES_CM_128_HMAC_SHA1_32 inline:" + key30 + "|2^20", "AES_CM_128_HMAC_SHA1_32", 2, nil},
		{"3 AES_CM_128_HMAC_SHA1_80 inline:" + strings.TrimRight(key30, "="), "AES_CM_128_HMAC_SHA1_80", 3, nil},
		{"1 AES_CM_128_HMAC_SHA1_80 inline:" + key30 + "|2^20|1:4", "", 0, errCryptoSyntax},
		{"1 AES_CM_128_HMAC_SHA1_80 inline:" + key30 + " UNENCRYPTED_SRTP", "", 0, errCryptoSyntax},
		{"1 AES_CM_128_HMAC_SHA1_80 inline:" + key30 + ";inline:" + key30, "", 0, errCryptoSyntax},
		{"1 AES_CM_128_HMAC_SHA1_80 inline:c2hvcnQ=", "", 0, errCryptoSyntax},
		{"1 F8_128_HMAC_SHA1_80 inline:" + key30, "", 0, errCryptoSuite},
		{"x AES_CM_128_HMAC_SHA1_80 inline:" + key30, "", 0, errCryptoSyntax},
		{"1 AES_CM_128_HMAC_SHA1_80 key:" + key30, "", 0, errCryptoSyntax},
		{"", "", 0, errCryptoSyntax},
	} {
		c, err := parseCrypto(tc.in)
		if tc.err != nil {
			require.ErrorIs(t, err, tc.err, tc.in)
			continue
		}
		require.NoError(t, err, tc.in)
		require.Equal(t, tc.suite, c.suite)
		require.Equal(t, tc.tag, c.tag)
		require.Len(t, c.key, 30)
	}
}

// TestSRTPRules is the decision table: policy × signalling × offer.
func TestSRTPRules(t *testing.T) {
	savp := srtpOffer("RTP/SAVP", "1 F8_128_HMAC_SHA1_80 inline:"+key30, "2 AES_CM_128_HMAC_SHA1_80 inline:"+key30)
	savpNone := srtpOffer("RTP/SAVP", "1 F8_128_HMAC_SHA1_80 inline:"+key30)
	avpCrypto := srtpOffer("RTP/AVP", "5 AES_CM_128_HMAC_SHA1_32 inline:"+key30)
	avp := srtpOffer("RTP/AVP")
	for _, tc := range []struct {
		offer  string
		policy SRTPPolicy
		tls    bool
		want   string // suite, "" for plain, or the error
		tag    int
	}{
		{savp, SRTPOptional, true, "AES_CM_128_HMAC_SHA1_80", 2},
		{savp, SRTPRequired, true, "AES_CM_128_HMAC_SHA1_80", 2},
		{savp, SRTPOptional, false, errSRTPPlain.Error(), 0},
		{savp, SRTPOff, true, errSRTPOff.Error(), 0},
		{savpNone, SRTPOptional, true, errCryptoSuite.Error(), 0},
		{avpCrypto, SRTPOptional, true, "AES_CM_128_HMAC_SHA1_32", 5},
		{avpCrypto, SRTPOptional, false, "", 0},
		{avpCrypto, SRTPOff, true, "", 0},
		{avpCrypto, SRTPRequired, false, errSRTPPlain.Error(), 0},
		{avp, SRTPOptional, true, "", 0},
		{avp, SRTPRequired, true, errSRTPNeeded.Error(), 0},
		{avp, SRTPOff, false, "", 0},
	} {
		name := fmt.Sprintf("%s/%s/tls=%v", strings.Fields(strings.Split(tc.offer, "m=audio ")[1])[1], tc.policy, tc.tls)
		t.Run(name, func(t *testing.T) {
			p, err := parseSDP([]byte(tc.offer))
			require.NoError(t, err)
			params, err := p.negotiate(nil)
			require.NoError(t, err)
			params, err = srtpRules{policy: tc.policy, keysOK: tc.tls}.secure(p, params, SDES{})
			if tc.want != "" && !strings.HasPrefix(tc.want, "AE") {
				require.EqualError(t, err, tc.want)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tc.want, params.SRTP.Suite)
			if tc.want == "" {
				return
			}
			require.Equal(t, tc.tag, params.SRTP.Tag)
			require.Len(t, params.SRTP.Local, 30)
			require.Equal(t, "0123456789abcdef0123456789abcd", params.SRTP.Remote)
			require.NotContains(t, params.String(), key30)
			require.Contains(t, params.String(), "srtp="+tc.want)

			body, err := newLocalSDP(1).answer(p, params, netip.MustParseAddrPort("198.51.100.5:20000"), netip.Addr{}, SendRecv)
			require.NoError(t, err)
			proto := strings.Fields(strings.Split(tc.offer, "m=audio ")[1])[1]
			require.Contains(t, string(body), "m=audio 20000 "+proto+" 0 101")
			line := fmt.Sprintf("a=crypto:%d %s inline:%s\r\n", tc.tag, tc.want, base64.StdEncoding.EncodeToString([]byte(params.SRTP.Local)))
			require.Contains(t, string(body), line)
		})
	}
}

// TestSRTPReoffer: a re-offer keeps our key for the same suite, takes the
// peer's new key, and may not drop SRTP.
func TestSRTPReoffer(t *testing.T) {
	r := srtpRules{policy: SRTPOptional, keysOK: true}
	p, err := parseSDP([]byte(srtpOffer("RTP/SAVP", "1 AES_CM_128_HMAC_SHA1_80 inline:"+key30)))
	require.NoError(t, err)
	params, err := p.negotiate(nil)
	require.NoError(t, err)
	first, err := r.secure(p, params, SDES{})
	require.NoError(t, err)

	other := base64.StdEncoding.EncodeToString([]byte("ABCDEFGHIJKLMNOPQRSTUVWXYZabcd"))
	p2, err := parseSDP([]byte(srtpOffer("RTP/SAVP", "1 AES_CM_128_HMAC_SHA1_80 inline:"+other)))
	require.NoError(t, err)
	again, err := r.secure(p2, params, first.SRTP)
	require.NoError(t, err)
	require.Equal(t, first.SRTP.Local, again.SRTP.Local, "our key stays")
	require.Equal(t, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcd", again.SRTP.Remote)

	plain, err := parseSDP([]byte(srtpOffer("RTP/AVP")))
	require.NoError(t, err)
	_, err = r.secure(plain, params, first.SRTP)
	require.ErrorIs(t, err, errSRTPDowngr)

	p3, err := parseSDP([]byte(srtpOffer("RTP/SAVP", "1 AES_CM_128_HMAC_SHA1_32 inline:"+other)))
	require.NoError(t, err)
	changed, err := r.secure(p3, params, first.SRTP)
	require.NoError(t, err)
	require.NotEqual(t, first.SRTP.Local, changed.SRTP.Local, "a new suite gets a new key")
}

// TestSRTPDelayedOffer: an INVITE without SDP gets our plain offer, or
// 488 when SRTP is required.
func TestSRTPDelayedOffer(t *testing.T) {
	p, err := srtpRules{policy: SRTPOptional, keysOK: true}.secure(nil, delayedOfferParams(defaultOfferOrder), SDES{})
	require.NoError(t, err)
	require.False(t, p.SRTP.Active())
	_, err = srtpRules{policy: SRTPRequired, keysOK: true}.secure(nil, delayedOfferParams(defaultOfferOrder), SDES{})
	require.ErrorIs(t, err, errSRTPNeeded)
}

func TestParseSRTPPolicy(t *testing.T) {
	for _, s := range []string{"off", "optional", "required"} {
		p, err := ParseSRTPPolicy(s)
		require.NoError(t, err)
		require.Equal(t, SRTPPolicy(s), p)
	}
	p, err := ParseSRTPPolicy("")
	require.NoError(t, err)
	require.Equal(t, SRTPOptional, p)
	_, err = ParseSRTPPolicy("mandatory")
	require.Error(t, err)
}

func FuzzParseCrypto(f *testing.F) {
	f.Add("1 AES_CM_128_HMAC_SHA1_80 inline:" + key30)
	f.Add("2 AEAD_AES_256_GCM inline:" + key30 + "|2^31")
	f.Fuzz(func(t *testing.T, s string) {
		c, err := parseCrypto(s)
		if err == nil {
			require.Len(t, c.key, sdesKeyLen[c.suite])
		}
	})
}

// TestSRTPPerNumber: a number that requires SRTP refuses a plain offer
// over UDP with 488 and says why, while the server's own policy (off here)
// still admits the same offer to another number (whose handler declines
// it with 480, so that no dialog outlives the test).
func TestSRTPPerNumber(t *testing.T) {
	h := HandlerFunc(func(_ context.Context, c *Call) { _ = c.Reject(480, "Temporarily Unavailable") })
	srv := startServer(t, Options{SRTP: SRTPOff}, h)
	conn, err := net.DialUDP("udp", nil, net.UDPAddrFromAddrPort(srv.UDPAddr()))
	require.NoError(t, err)
	defer conn.Close()
	port := conn.LocalAddr().(*net.UDPAddr).Port
	final := func(number string) string {
		msg := strings.Replace(invite(port, number, ""), "malformed-@", "srtp-"+number+"@", 1)
		msg = strings.Replace(msg, "z9hG4bK-malformed-", "z9hG4bK-srtp-"+number[1:], 1)
		_, err := conn.Write([]byte(msg))
		require.NoError(t, err)
		for {
			require.NoError(t, conn.SetReadDeadline(time.Now().Add(3*time.Second)))
			buf := make([]byte, 4096)
			n, err := conn.Read(buf)
			require.NoError(t, err)
			if r := string(buf[:n]); !strings.HasPrefix(r, "SIP/2.0 1") {
				return r
			}
		}
	}
	r := final(srtpNumber)
	require.True(t, strings.HasPrefix(r, "SIP/2.0 488"), r)
	require.Contains(t, r, `Warning: 305 switchboard "srtp keys over unencrypted signalling"`)
	r = final(openNumber)
	require.True(t, strings.HasPrefix(r, "SIP/2.0 480"), "past the SRTP check: %s", r)
}
