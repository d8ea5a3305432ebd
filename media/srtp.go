package media

import (
	"errors"
	"fmt"

	"github.com/pion/rtp"
	"github.com/pion/srtp/v3"
)

// SRTPKeys are a call's SRTP keys as SDES (RFC 4568) exchanged them: the
// crypto-suite name and each direction's master key followed by its
// master salt. They are secrets: never log them.
type SRTPKeys struct {
	// Suite is the SDES crypto-suite name, e.g. "AES_CM_128_HMAC_SHA1_80".
	Suite string
	// Local protects what we send; Remote authenticates and decrypts what
	// the peer sends.
	Local, Remote []byte
}

// String names the suite only: the keys stay out of logs.
func (k SRTPKeys) String() string { return k.Suite }

// srtpReplayWindow is the replay window of inbound SRTP and SRTCP (RFC
// 3711 §3.3.2 asks for at least 64 packets).
const srtpReplayWindow = 128

// srtpSuites maps the SDES crypto-suite names we take to pion's profiles.
var srtpSuites = map[string]srtp.ProtectionProfile{
	"AES_CM_128_HMAC_SHA1_80": srtp.ProtectionProfileAes128CmHmacSha1_80, // RFC 4568 §6.2.1
	"AES_CM_128_HMAC_SHA1_32": srtp.ProtectionProfileAes128CmHmacSha1_32, // RFC 4568 §6.2.2
	"AES_256_CM_HMAC_SHA1_80": srtp.ProtectionProfileAes256CmHmacSha1_80, // RFC 6188
	"AES_256_CM_HMAC_SHA1_32": srtp.ProtectionProfileAes256CmHmacSha1_32, // RFC 6188
	"AEAD_AES_128_GCM":        srtp.ProtectionProfileAeadAes128Gcm,       // RFC 7714 §12
	"AEAD_AES_256_GCM":        srtp.ProtectionProfileAeadAes256Gcm,       // RFC 7714 §12
}

// SRTPKeyLen returns the length of the master key and salt of an SDES
// suite, or false when the suite is not supported.
func SRTPKeyLen(suite string) (int, bool) {
	p, ok := srtpSuites[suite]
	if !ok {
		return 0, false
	}
	k, err := p.KeyLen()
	if err != nil {
		return 0, false
	}
	s, err := p.SaltLen()
	if err != nil {
		return 0, false
	}
	return k + s, true
}

// srtpState is the crypto of one call: a context per direction and per
// protocol, so that each goroutine (RTP reader, RTCP reader, media
// goroutine) owns the contexts it uses.
type srtpState struct {
	keys           SRTPKeys
	rxRTP, rxRTCP  *srtp.Context
	txRTP, txRTCP  *srtp.Context
	rtpHdr         rtp.Header // scratch of the sender (EncryptRTP)
	authTagOverRTP int        // bytes SRTP adds to an RTP packet
}

// newSRTPState derives the contexts of keys.
func newSRTPState(keys SRTPKeys) (*srtpState, error) {
	profile, ok := srtpSuites[keys.Suite]
	if !ok {
		return nil, fmt.Errorf("%w: %q", errSRTPSuite, keys.Suite)
	}
	n, _ := SRTPKeyLen(keys.Suite)
	if len(keys.Local) != n || len(keys.Remote) != n {
		return nil, fmt.Errorf("%w: %s needs %d bytes of key and salt", errSRTPKey, keys.Suite, n)
	}
	kl, _ := profile.KeyLen()
	mk := func(key []byte, opts ...srtp.ContextOption) (*srtp.Context, error) {
		return srtp.CreateContext(key[:kl], key[kl:], profile, opts...)
	}
	st := &srtpState{keys: keys}
	var errs [4]error
	st.rxRTP, errs[0] = mk(keys.Remote, srtp.SRTPReplayProtection(srtpReplayWindow))
	st.rxRTCP, errs[1] = mk(keys.Remote, srtp.SRTCPReplayProtection(srtpReplayWindow))
	st.txRTP, errs[2] = mk(keys.Local)
	st.txRTCP, errs[3] = mk(keys.Local)
	if err := errors.Join(errs[:]...); err != nil {
		return nil, fmt.Errorf("srtp context: %w", err)
	}
	if st.authTagOverRTP, _ = profile.AuthTagRTPLen(); st.authTagOverRTP == 0 {
		st.authTagOverRTP, _ = profile.AEADAuthTagLen()
	}
	return st, nil
}

// same reports whether keys are the ones in use.
func (st *srtpState) same(keys SRTPKeys) bool {
	return st.keys.Suite == keys.Suite && string(st.keys.Local) == string(keys.Local) && string(st.keys.Remote) == string(keys.Remote)
}
