package sip

import (
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/emiago/sipgo/sip"
	"github.com/pion/sdp/v3"
)

// SRTPPolicy says when calls use SRTP with SDES keys (RFC 4568).
type SRTPPolicy string

// SRTP policies.
const (
	// SRTPOff answers plain RTP only: an RTP/SAVP offer gets 488, crypto
	// attributes of an RTP/AVP offer are ignored.
	SRTPOff SRTPPolicy = "off"
	// SRTPOptional takes SRTP when the caller offers it (RTP/SAVP, or
	// RTP/AVP with a=crypto) and the keys may be exchanged, plain RTP
	// otherwise.
	SRTPOptional SRTPPolicy = "optional"
	// SRTPRequired refuses (488) any call that does not end up on SRTP.
	SRTPRequired SRTPPolicy = "required"
)

// ParseSRTPPolicy reads a policy name.
func ParseSRTPPolicy(s string) (SRTPPolicy, error) {
	switch p := SRTPPolicy(s); p {
	case SRTPOff, SRTPOptional, SRTPRequired:
		return p, nil
	case "":
		return SRTPOptional, nil
	}
	return "", fmt.Errorf("srtp policy %q: must be off, optional or required", s)
}

// SDES is the negotiated SRTP of a call: the crypto attribute's tag and
// suite and both master keys (key then salt, raw bytes). The keys are
// secrets: String shows the suite only, and nothing here logs them.
type SDES struct {
	Tag   int
	Suite string
	// Local is our key (in our answer); Remote the peer's (its offer).
	Local, Remote string
}

// Active reports whether the call uses SRTP.
func (s SDES) Active() bool { return s.Suite != "" }

// String names the suite only.
func (s SDES) String() string {
	if s.Suite == "" {
		return "none"
	}
	return s.Suite
}

// sdesKeyLen is the master key plus salt length of each SDES crypto-suite
// we take (RFC 4568 §6.2, RFC 6188 §7.1, RFC 7714 §12), in bytes.
var sdesKeyLen = map[string]int{
	"AES_CM_128_HMAC_SHA1_80": 30,
	"AES_CM_128_HMAC_SHA1_32": 30,
	"AES_256_CM_HMAC_SHA1_80": 46,
	"AES_256_CM_HMAC_SHA1_32": 46,
	"AEAD_AES_128_GCM":        28,
	"AEAD_AES_256_GCM":        44,
}

var (
	errCryptoSyntax = errors.New("bad crypto attribute")
	errCryptoSuite  = errors.New("no crypto suite we support")
	errSRTPOff      = errors.New("srtp is off")
	errSRTPPlain    = errors.New("srtp keys over unencrypted signalling")
	errSRTPNeeded   = errors.New("srtp is required")
	errSRTPDowngr   = errors.New("a re-offer may not drop srtp")
)

// cryptoAttr is one parsed a=crypto line.
type cryptoAttr struct {
	tag   int
	suite string
	key   []byte
}

// parseCrypto reads "tag suite inline:KEY[|lifetime][|MKI:len]
// [session-params]" (RFC 4568 §9.1). Lines with several keys, an MKI or
// session parameters (UNENCRYPTED_SRTP, KDR, ...) are refused: we do not
// implement them and must not pretend to.
func parseCrypto(v string) (cryptoAttr, error) {
	f := strings.Fields(v)
	if len(f) != 3 {
		return cryptoAttr{}, fmt.Errorf("%w: %d fields", errCryptoSyntax, len(f))
	}
	tag, err := strconv.Atoi(f[0])
	if err != nil || tag < 0 || tag > 999999999 {
		return cryptoAttr{}, fmt.Errorf("%w: tag %q", errCryptoSyntax, f[0])
	}
	n, ok := sdesKeyLen[f[1]]
	if !ok {
		return cryptoAttr{}, fmt.Errorf("%w: %q", errCryptoSuite, f[1])
	}
	inline, ok := strings.CutPrefix(f[2], "inline:")
	if !ok || strings.Contains(inline, ";") {
		return cryptoAttr{}, fmt.Errorf("%w: one inline key expected", errCryptoSyntax)
	}
	parts := strings.Split(inline, "|")
	if len(parts) > 2 || (len(parts) == 2 && strings.Contains(parts[1], ":")) {
		return cryptoAttr{}, fmt.Errorf("%w: MKI not supported", errCryptoSyntax)
	}
	key, err := base64.StdEncoding.DecodeString(parts[0])
	if err != nil {
		key, err = base64.RawStdEncoding.DecodeString(parts[0])
	}
	if err != nil || len(key) != n {
		return cryptoAttr{}, fmt.Errorf("%w: %s key of %d bytes expected", errCryptoSyntax, f[1], n)
	}
	return cryptoAttr{tag: tag, suite: f[1], key: key}, nil
}

// cryptoOf lists the usable a=crypto lines of a media description in the
// offerer's order of preference.
func cryptoOf(md *sdp.MediaDescription) []cryptoAttr {
	var out []cryptoAttr
	for _, a := range md.Attributes {
		if a.Key != "crypto" {
			continue
		}
		if c, err := parseCrypto(a.Value); err == nil {
			out = append(out, c)
		}
	}
	return out
}

// isSecureProto reports whether an m= line's protocol mandates SRTP.
func isSecureProto(proto string) bool { return proto == "RTP/SAVP" || proto == "RTP/SAVPF" }

// srtpRules is what decides a call's SRTP: the policy and whether the
// signalling that carries the keys is encrypted (or may be plain).
type srtpRules struct {
	policy SRTPPolicy
	keysOK bool
}

// srtpRules returns the SRTP rules for a request to route (nil: none)
// that came over transport: the number's policy, else the server's.
func (s *Server) srtpRules(transport string, route *Route) srtpRules {
	secure := strings.EqualFold(transport, "TLS") || strings.EqualFold(transport, "WSS")
	policy := s.opts.SRTP
	if route != nil && route.SRTP != "" {
		policy = route.SRTP
	}
	return srtpRules{policy: policy, keysOK: secure || s.opts.SRTPOverPlain}
}

// secure settles SRTP for an offer (nil: a delayed offer) already
// negotiated into params: the
// suite is the offerer's first one we support, with a fresh key of ours
// (or prev's, when the suite is unchanged: a re-offer keeps our key). A
// SAVP offer that cannot be honoured, or a call that must be and cannot
// be on SRTP, is an error (488).
func (r srtpRules) secure(p *parsedSDP, params MediaParams, prev SDES) (MediaParams, error) {
	params.SRTP = SDES{}
	if p == nil { // a delayed offer: ours is plain RTP/AVP (no SDES offers)
		if r.policy == SRTPRequired {
			return params, errSRTPNeeded
		}
		return params, nil
	}
	wantKeys := r.policy != SRTPOff && r.keysOK && len(p.crypto) > 0
	switch {
	case isSecureProto(p.proto) && r.policy == SRTPOff:
		return params, errSRTPOff
	case isSecureProto(p.proto) && !r.keysOK:
		return params, errSRTPPlain
	case isSecureProto(p.proto) && len(p.crypto) == 0:
		return params, errCryptoSuite
	case !wantKeys && r.policy == SRTPRequired:
		if !r.keysOK {
			return params, errSRTPPlain
		}
		return params, errSRTPNeeded
	case !wantKeys && prev.Active():
		return params, errSRTPDowngr
	case !wantKeys:
		return params, nil
	}
	c := p.crypto[0]
	local := prev.Local
	if prev.Suite != c.suite {
		k := make([]byte, sdesKeyLen[c.suite])
		if _, err := rand.Read(k); err != nil {
			return params, fmt.Errorf("srtp key: %w", err)
		}
		local = string(k)
	}
	params.SRTP = SDES{Tag: c.tag, Suite: c.suite, Local: local, Remote: string(c.key)}
	return params, nil
}

// appendCrypto adds our a=crypto line to an answer (RFC 4568 §7.1.2: the
// offer's tag and suite, our key).
func appendCrypto(md *sdp.MediaDescription, s SDES) {
	if !s.Active() {
		return
	}
	md.WithValueAttribute("crypto", fmt.Sprintf("%d %s inline:%s", s.Tag, s.Suite, base64.StdEncoding.EncodeToString([]byte(s.Local))))
}

// srtpWarning is the Warning header of a 488 for err (RFC 3261 §20.43:
// 305 incompatible media format).
func srtpWarning(err error) sip.Header {
	return sip.NewHeader("Warning", fmt.Sprintf(`305 switchboard "%s"`, strings.ReplaceAll(err.Error(), `"`, "'")))
}
