package sip

import (
	"crypto/rand"
	"encoding/base64"
	"fmt"

	"github.com/pion/sdp/v3"
)

// SDES in our own offers (a placed call's INVITE): RFC 4568 section 7.1.1.
// We offer one key per suite, each under its own tag, in our order of
// preference; the answer names the tag it took and gives its own key.

// offeredSuites are the suites of our offers, best first: the two every
// SDES peer has (RFC 4568 section 6.2).
var offeredSuites = []string{"AES_CM_128_HMAC_SHA1_80", "AES_CM_128_HMAC_SHA1_32"}

// offerCrypto is the SDES part of our offer: our keys, and whether the
// stream is RTP/SAVP (SRTP required) or RTP/AVP with keys ("best
// effort": a callee that ignores them answers plain RTP).
type offerCrypto struct {
	keys []cryptoAttr
	savp bool
}

// newOfferCrypto makes fresh keys for each suite we offer.
func newOfferCrypto(savp bool) (*offerCrypto, error) {
	o := &offerCrypto{savp: savp}
	for i, suite := range offeredSuites {
		k := make([]byte, sdesKeyLen[suite])
		if _, err := rand.Read(k); err != nil {
			return nil, fmt.Errorf("srtp key: %w", err)
		}
		o.keys = append(o.keys, cryptoAttr{tag: i + 1, suite: suite, key: k})
	}
	return o, nil
}

// protos is the m= line's protocol (nil: plain RTP/AVP).
func (o *offerCrypto) protos() []string {
	if o != nil && o.savp {
		return []string{"RTP", "SAVP"}
	}
	return []string{"RTP", "AVP"}
}

// append adds our a=crypto lines (nil: none).
func (o *offerCrypto) append(md *sdp.MediaDescription) {
	if o == nil {
		return
	}
	for _, k := range o.keys {
		md.WithValueAttribute("crypto", fmt.Sprintf("%d %s inline:%s", k.tag, k.suite, base64.StdEncoding.EncodeToString(k.key)))
	}
}

// answered reads the SDES of the answer to our offer (RFC 4568 section
// 7.1.3): its crypto line names one of our tags with its suite and gives
// the answerer's key. An answer without one is plain RTP, which an
// RTP/SAVP offer does not allow.
func (o *offerCrypto) answered(body []byte) (SDES, error) {
	p, err := parseSDP(body)
	if err != nil {
		return SDES{}, err
	}
	if len(p.crypto) == 0 {
		if o.savp || isSecureProto(p.proto) {
			return SDES{}, fmt.Errorf("%w: the answer has no usable crypto attribute", errSRTPNeeded)
		}
		return SDES{}, nil
	}
	a := p.crypto[0]
	for _, k := range o.keys {
		if k.tag == a.tag && k.suite == a.suite {
			return SDES{Tag: a.tag, Suite: a.suite, Local: string(k.key), Remote: string(a.key)}, nil
		}
	}
	return SDES{}, fmt.Errorf("%w: the answer's crypto %d %s was not offered", errCryptoSuite, a.tag, a.suite)
}

// placeCrypto is the SDES of a placed call's offer under rules: keys when
// SRTP is not off and they may travel on this signalling, RTP/SAVP when
// it is required. Required SRTP over signalling that may not carry keys
// is an error: the trunk must be TLS.
func placeCrypto(rules srtpRules) (*offerCrypto, error) {
	switch {
	case rules.policy == SRTPRequired && !rules.keysOK:
		return nil, fmt.Errorf("%w: srtp is required (the number's srtp, or rtp.srtp) and SDES keys travel only over SIP TLS: use a sips: or ;transport=tls trunk (or rtp.srtp_signalling any)", errSRTPPlain)
	case rules.policy == SRTPOff || !rules.keysOK:
		return nil, nil
	}
	return newOfferCrypto(rules.policy == SRTPRequired)
}
