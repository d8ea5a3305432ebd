package media

import (
	"bytes"
	"crypto/rand"
	"net"
	"testing"
	"time"

	"github.com/pion/rtp"
	"github.com/pion/srtp/v3"
	"github.com/stretchr/testify/require"
)

func newKey(t testing.TB, suite string) []byte {
	n, ok := SRTPKeyLen(suite)
	require.True(t, ok, suite)
	k := make([]byte, n)
	_, err := rand.Read(k)
	require.NoError(t, err)
	return k
}

// TestSessionsTalkSRTP: two sessions with mirrored SDES keys hear each
// other, for each suite.
func TestSessionsTalkSRTP(t *testing.T) {
	for _, suite := range []string{"AES_CM_128_HMAC_SHA1_80", "AES_CM_128_HMAC_SHA1_32", "AEAD_AES_128_GCM", "AES_256_CM_HMAC_SHA1_80"} {
		t.Run(suite, func(t *testing.T) {
			pool := newPool(t)
			ka, kb := newKey(t, suite), newKey(t, suite)
			var sinkB audioSink
			a := newSession(t, pool, SessionOptions{SRTP: &SRTPKeys{Suite: suite, Local: ka, Remote: kb}, RTCPInterval: 100 * time.Millisecond})
			b := newListeningSession(t, pool, SessionOptions{SRTP: &SRTPKeys{Suite: suite, Local: kb, Remote: ka}, RTCPInterval: 100 * time.Millisecond}, 8000, sinkB.onAudio)
			a.SetRemote(addr(b.LocalPort()))
			b.SetRemote(addr(a.LocalPort()))
			a.Playout().Write("item_a", tone(440, 8000, 4000, 10000))
			require.Eventually(t, func() bool {
				n, e := sinkB.get()
				return n >= 20 && e > 0 && b.Stats().RTCPIn > 0 && a.Stats().RTCPIn > 0
			}, 5*time.Second, 10*time.Millisecond)
			require.Zero(t, b.Stats().Strangers)
			require.Contains(t, b.String(), "SRTP("+suite+") -> RTP -> Jitter(40ms PCMU) => [PCMU(decode) -> PCM(8k)]")
		})
	}
}

// TestSessionSRTPWire: what the session sends is SRTP (the payload is not
// the G.711 it encodes, and it authenticates under our key); what it
// takes must authenticate under the peer's key: plain RTP from the very
// address the SDP names is dropped as a stranger's and latches nothing.
func TestSessionSRTPWire(t *testing.T) {
	const suite = "AES_CM_128_HMAC_SHA1_80"
	pool := newPool(t)
	local, remote := newKey(t, suite), newKey(t, suite)
	peer, err := net.ListenUDP("udp", net.UDPAddrFromAddrPort(addr(0)))
	require.NoError(t, err)
	defer peer.Close()
	var sink audioSink
	s := newListeningSession(t, pool, SessionOptions{Remote: peer.LocalAddr().(*net.UDPAddr).AddrPort(),
		SRTP: &SRTPKeys{Suite: suite, Local: local, Remote: remote}}, 8000, sink.onAudio)
	s.Playout().Write("x", tone(440, 8000, 1600, 10000))

	// Outbound: SRTP under our key.
	dec, err := srtp.CreateContext(local[:16], local[16:], srtp.ProtectionProfileAes128CmHmacSha1_80)
	require.NoError(t, err)
	buf := make([]byte, 1500)
	require.NoError(t, peer.SetReadDeadline(time.Now().Add(3*time.Second)))
	n, err := peer.Read(buf)
	require.NoError(t, err)
	require.Equal(t, 12+160+10, n, "RTP header, 20 ms of G.711, 80-bit tag")
	plain, err := dec.DecryptRTP(nil, buf[:n], nil)
	require.NoError(t, err)
	require.False(t, bytes.Equal(plain[12:], buf[12:n-10]), "the payload on the wire is encrypted")

	// Inbound: plain RTP from the SDP's own address is refused.
	pkt := &rtp.Packet{Header: rtp.Header{Version: 2, PayloadType: 0, SequenceNumber: 1, Timestamp: 160, SSRC: 42},
		Payload: PCMU.EncodeFrame(nil, tone(440, 8000, 160, 10000))}
	raw, err := pkt.Marshal()
	require.NoError(t, err)
	to := addr(s.LocalPort())
	_, err = peer.WriteToUDPAddrPort(raw, to)
	require.NoError(t, err)
	require.Eventually(t, func() bool { return s.Stats().Strangers == 1 }, 2*time.Second, 5*time.Millisecond)
	require.Zero(t, s.Stats().Latches)

	// SRTP under the peer's key is taken.
	enc, err := srtp.CreateContext(remote[:16], remote[16:], srtp.ProtectionProfileAes128CmHmacSha1_80)
	require.NoError(t, err)
	for i := range 20 {
		pkt.SequenceNumber, pkt.Timestamp = uint16(2+i), uint32(2+i)*160
		raw, err := pkt.Marshal()
		require.NoError(t, err)
		sec, err := enc.EncryptRTP(nil, raw, nil)
		require.NoError(t, err)
		_, err = peer.WriteToUDPAddrPort(sec, to)
		require.NoError(t, err)
		if i == 0 { // a replay of the first one is refused
			_, err = peer.WriteToUDPAddrPort(sec, to)
			require.NoError(t, err)
		}
		// One packet a frame, as a phone sends them: the next once the
		// session's frame tick read this one.
		require.Eventually(t, func() bool { return s.Stats().PacketsIn == uint64(i+1) }, 2*time.Second, time.Millisecond)
	}
	require.Eventually(t, func() bool { n, _ := sink.get(); return n >= 10 }, 2*time.Second, 10*time.Millisecond)
	// Packets are read at the session's next frame tick: all of them first.
	require.Eventually(t, func() bool { return s.Stats().PacketsIn == 20 }, 2*time.Second, 5*time.Millisecond)
	st := s.Stats()
	require.Equal(t, uint64(1), st.Latches)
	require.Equal(t, uint64(20), st.PacketsIn)
	require.Equal(t, uint64(2), st.Strangers, "the plain packet and the replay")

	// Re-keying the peer's direction (a re-INVITE): the old key no longer
	// authenticates.
	other := newKey(t, suite)
	require.NoError(t, s.SetSRTP(&SRTPKeys{Suite: suite, Local: local, Remote: other}))
	pkt.SequenceNumber, pkt.Timestamp = 30, 30*160
	raw, err = pkt.Marshal()
	require.NoError(t, err)
	sec, err := enc.EncryptRTP(nil, raw, nil)
	require.NoError(t, err)
	_, err = peer.WriteToUDPAddrPort(sec, to)
	require.NoError(t, err)
	require.Eventually(t, func() bool { return s.Stats().Strangers == 3 }, 2*time.Second, 5*time.Millisecond)
}

func TestSRTPKeys(t *testing.T) {
	n, ok := SRTPKeyLen("AES_CM_128_HMAC_SHA1_80")
	require.True(t, ok)
	require.Equal(t, 30, n)
	n, ok = SRTPKeyLen("AEAD_AES_256_GCM")
	require.True(t, ok)
	require.Equal(t, 44, n)
	_, ok = SRTPKeyLen("F8_128_HMAC_SHA1_80")
	require.False(t, ok)
	k := SRTPKeys{Suite: "AES_CM_128_HMAC_SHA1_80", Local: []byte("secret-local-key-0123456789abc"), Remote: []byte("secret")}
	require.Equal(t, "AES_CM_128_HMAC_SHA1_80", k.String())
	_, err := newSRTPState(k)
	require.ErrorIs(t, err, errSRTPKey)
	_, err = newSRTPState(SRTPKeys{Suite: "NULL"})
	require.ErrorIs(t, err, errSRTPSuite)
}

// BenchmarkFrameSRTPWrite is one 20 ms packet out through SRTP (marshal,
// encrypt, send on loopback).
func BenchmarkFrameSRTPWrite(b *testing.B) {
	pool, err := NewPortPool(loopback, 39100, 39199)
	if err != nil {
		b.Fatal(err)
	}
	pair, err := pool.Allocate()
	if err != nil {
		b.Fatal(err)
	}
	key := newKey(b, "AES_CM_128_HMAC_SHA1_80")
	s, err := NewSession(pair, SessionOptions{Remote: addr(9), SRTP: &SRTPKeys{Suite: "AES_CM_128_HMAC_SHA1_80", Local: key, Remote: key}})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	s.Hold()
	h := &rtp.Header{Version: 2, PayloadType: 0, SSRC: 7}
	payload := make([]byte, 160)
	b.ReportAllocs()
	for b.Loop() {
		h.SequenceNumber++
		h.Timestamp += 160
		if err := s.WriteRTP(h, payload); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkFrameSRTPProtectUnprotect is one 20 ms packet protected by one
// side's context and authenticated, replay-checked and decrypted by the
// other's (the crypto of a packet each way, without sockets).
func BenchmarkFrameSRTPProtectUnprotect(b *testing.B) {
	const suite = "AES_CM_128_HMAC_SHA1_80"
	k1, k2 := newKey(b, suite), newKey(b, suite)
	a, err := newSRTPState(SRTPKeys{Suite: suite, Local: k1, Remote: k2})
	if err != nil {
		b.Fatal(err)
	}
	z, err := newSRTPState(SRTPKeys{Suite: suite, Local: k2, Remote: k1})
	if err != nil {
		b.Fatal(err)
	}
	h := rtp.Header{Version: 2, PayloadType: 0, SSRC: 7}
	plain := make([]byte, 0, 1500)
	enc, dec := make([]byte, 1500), make([]byte, 1500)
	payload := make([]byte, 160)
	var eh, dh rtp.Header
	b.ReportAllocs()
	for b.Loop() {
		h.SequenceNumber++
		h.Timestamp += 160
		n, _ := h.MarshalTo(plain[:h.MarshalSize()])
		plain = append(plain[:n], payload...)
		out, err := a.txRTP.EncryptRTP(enc[:0], plain, &eh)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := z.rxRTP.DecryptRTP(dec, out, &dh); err != nil {
			b.Fatal(err)
		}
	}
}
