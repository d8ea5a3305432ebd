package sip

import (
	"bytes"
	"fmt"
	"net/netip"
	"strconv"
	"strings"
	"time"

	"github.com/pion/sdp/v3"
)

// Codec is an RTP payload format.
type Codec struct {
	// PayloadType is the RTP payload type number used on the wire (the
	// caller's, for dynamic types).
	PayloadType uint8
	// Name is the encoding name as in rtpmap, e.g. "PCMU" or "PCMA".
	Name string
	// ClockRate is the RTP clock rate in Hz.
	ClockRate uint32
	// Params is the peer's a=fmtp value for this payload type ("" when
	// none), e.g. Opus's "useinbandfec=1;maxplaybackrate=16000".
	Params string
}

// The codecs the phone leg speaks: the RFC 3551 static payload types and
// Opus. G.722 carries 16 kHz audio but its RTP clock rate is 8000 (RFC
// 3551 section 4.5.2), which is what its rtpmap says. Opus's payload type
// is dynamic (the offerer's; 111 in our own offers) and its rtpmap is
// always opus/48000/2, whatever the channels and the rate it is coded at
// (RFC 7587 section 7).
var (
	PCMU = Codec{PayloadType: 0, Name: "PCMU", ClockRate: 8000}
	PCMA = Codec{PayloadType: 8, Name: "PCMA", ClockRate: 8000}
	G722 = Codec{PayloadType: 9, Name: "G722", ClockRate: 8000}
	Opus = Codec{PayloadType: 111, Name: "opus", ClockRate: 48000}
)

// opusFmtp is what our SDP says of Opus (RFC 7587 section 6.1): we decode
// at 24 kHz (the model's rate, so nothing above its 12 kHz band is worth
// sending us) and encode from it, mono, and take in-band FEC.
const opusFmtp = "useinbandfec=1;stereo=0;sprop-stereo=0;maxplaybackrate=24000;sprop-maxcapturerate=24000"

// IsOpus reports whether c is Opus.
func (c Codec) IsOpus() bool { return strings.EqualFold(c.Name, Opus.Name) }

// Wideband reports whether c carries more than telephone band audio.
func (c Codec) Wideband() bool { return strings.EqualFold(c.Name, G722.Name) || c.IsOpus() }

// AudioRate is the rate of the audio c carries: 8000 for G.711, 16000
// for G.722, 48000 for Opus. A call's leg keeps the rate of its first
// codec, so a re-offer may change the codec only within it.
func (c Codec) AudioRate() int {
	switch {
	case c.IsOpus():
		return 48000
	case strings.EqualFold(c.Name, G722.Name):
		return 16000
	}
	return 8000
}

// FormatParam returns the value of one parameter of the peer's a=fmtp for
// c (names compared without case), e.g. "maxaveragebitrate".
func (c Codec) FormatParam(name string) (string, bool) {
	for _, kv := range strings.Split(c.Params, ";") {
		k, v, _ := strings.Cut(strings.TrimSpace(kv), "=")
		if strings.EqualFold(strings.TrimSpace(k), name) {
			return strings.TrimSpace(v), true
		}
	}
	return "", false
}

// CodecNames are the codec names a preference list (Route.Codecs) may
// hold.
var CodecNames = []string{"OPUS", "G722", "PCMU", "PCMA"}

// Direction is an SDP media direction attribute (RFC 3264 section 6.1).
type Direction string

// SDP directions.
const (
	SendRecv Direction = "sendrecv"
	SendOnly Direction = "sendonly"
	RecvOnly Direction = "recvonly"
	Inactive Direction = "inactive"
)

// Reverse is the direction to answer an offer with: sendonly gets
// recvonly, recvonly gets sendonly, the others are mirrored unchanged.
func (d Direction) Reverse() Direction {
	switch d {
	case SendOnly:
		return RecvOnly
	case RecvOnly:
		return SendOnly
	case Inactive:
		return Inactive
	default:
		return SendRecv
	}
}

// MediaParams is the negotiated media of a call as seen from Switchboard.
type MediaParams struct {
	// RemoteAddr is where to send RTP.
	RemoteAddr netip.AddrPort
	// Codec is the audio codec to send and expect.
	Codec Codec
	// DTMFPayloadType is the peer's telephone-event payload type, 0 if
	// it offered none.
	DTMFPayloadType uint8
	// DTMFClockRate is the RTP clock rate of that telephone-event (the
	// codec's own when the peer offers it, RFC 4733 section 2.1: 48000
	// beside Opus); 8000 when none.
	DTMFClockRate uint32
	// Ptime is the packetisation interval, 10-60 ms (default 20 ms).
	Ptime time.Duration
	// Direction is the peer's direction (from its SDP). A peer putting us
	// on hold sends sendonly or inactive.
	Direction Direction
	// SRTP is the call's SDES crypto (zero: plain RTP); see srtp.go.
	SRTP SDES
}

// CanSend reports whether we may send RTP to the peer (false on hold).
func (m MediaParams) CanSend() bool {
	return (m.Direction == SendRecv || m.Direction == RecvOnly) && m.RemoteAddr.Addr().IsValid() && !m.RemoteAddr.Addr().IsUnspecified()
}

// String gives a short log form.
func (m MediaParams) String() string {
	s := fmt.Sprintf("%s %s/%d pt=%d dtmf=%d ptime=%s %s", m.RemoteAddr, m.Codec.Name, m.Codec.ClockRate, m.Codec.PayloadType, m.DTMFPayloadType, m.Ptime, m.Direction)
	if m.DTMFPayloadType != 0 && m.DTMFClockRate != 8000 && m.DTMFClockRate != 0 {
		s += fmt.Sprintf(" dtmf_rate=%d", m.DTMFClockRate)
	}
	if m.SRTP.Active() {
		s += " srtp=" + m.SRTP.String()
	}
	return s
}

const (
	defaultPtime = 20 * time.Millisecond
	minPtime     = 10 * time.Millisecond
	maxPtime     = 60 * time.Millisecond
)

// offerMedia is one parsed m= line.
type offerMedia struct {
	media   string
	port    int
	proto   string
	formats []string
}

// parsedSDP is what negotiation needs from a remote description.
type parsedSDP struct {
	media []offerMedia
	// audio is the index of the first usable audio stream, -1 if none.
	audio  int
	params MediaParams
	// codecs is the audio stream's codec list in the peer's order.
	codecs []Codec
	// proto is the audio stream's protocol; crypto its usable a=crypto
	// lines (SDES, srtp.go) in the peer's order.
	proto  string
	crypto []cryptoAttr
}

// parseSDP reads a remote description with pion/sdp and extracts the
// first active RTP/AVP or RTP/SAVP audio stream.
func parseSDP(body []byte) (*parsedSDP, error) {
	var sd sdp.SessionDescription
	if err := sd.Unmarshal(body); err != nil {
		return nil, fmt.Errorf("%w: %v", errBadSDP, err)
	}
	p := &parsedSDP{audio: -1}
	sessDir := directionOf(sd.Attributes, "")
	for i, md := range sd.MediaDescriptions {
		om := offerMedia{media: md.MediaName.Media, port: md.MediaName.Port.Value, proto: strings.Join(md.MediaName.Protos, "/"), formats: md.MediaName.Formats}
		p.media = append(p.media, om)
		if p.audio >= 0 || om.media != "audio" || om.port == 0 || (om.proto != "RTP/AVP" && om.proto != "RTP/AVPF" && !isSecureProto(om.proto)) {
			continue
		}
		ci := md.ConnectionInformation
		if ci == nil {
			ci = sd.ConnectionInformation
		}
		if ci == nil || ci.Address == nil {
			return nil, fmt.Errorf("%w: audio stream without connection address", errBadSDP)
		}
		host := ci.Address.Address
		if j := strings.IndexByte(host, '/'); j >= 0 {
			host = host[:j]
		}
		addr, err := netip.ParseAddr(host)
		if err != nil || om.port < 1 || om.port > 65535 {
			return nil, fmt.Errorf("%w: connection address %q port %d", errBadSDP, ci.Address.Address, om.port)
		}
		p.audio = i
		p.params.RemoteAddr = netip.AddrPortFrom(addr.Unmap(), uint16(om.port))
		p.params.Direction = directionOf(md.Attributes, sessDir)
		if addr.IsUnspecified() {
			// RFC 2543 hold: c=0.0.0.0.
			p.params.Direction = Inactive
		}
		p.params.Ptime = defaultPtime
		if v, ok := md.Attribute("ptime"); ok {
			p.params.Ptime = clampPtime(v)
		}
		p.codecs = codecsOf(md)
		p.proto, p.crypto = om.proto, cryptoOf(md)
	}
	return p, nil
}

func directionOf(attrs []sdp.Attribute, def Direction) Direction {
	for _, a := range attrs {
		switch Direction(a.Key) {
		case SendRecv, SendOnly, RecvOnly, Inactive:
			return Direction(a.Key)
		}
	}
	if def == "" {
		return SendRecv
	}
	return def
}

// clampPtime reads an a=ptime value and keeps it within 10-60 ms in whole
// 10 ms steps (what a 20 ms pacer can honour).
func clampPtime(v string) time.Duration {
	f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
	if err != nil || f <= 0 {
		return defaultPtime
	}
	d := time.Duration(f * float64(time.Millisecond)).Round(10 * time.Millisecond)
	return min(max(d, minPtime), maxPtime)
}

// codecsOf lists the formats of an m= line, resolving rtpmap entries and
// the static payload types 0 and 8.
func codecsOf(md *sdp.MediaDescription) []Codec {
	rtpmap, fmtp := map[string]Codec{}, map[string]string{}
	for _, a := range md.Attributes {
		if a.Key != "rtpmap" && a.Key != "fmtp" {
			continue
		}
		pt, enc, ok := strings.Cut(strings.TrimSpace(a.Value), " ")
		if !ok {
			continue
		}
		if a.Key == "fmtp" {
			fmtp[pt] = strings.TrimSpace(enc)
			continue
		}
		parts := strings.Split(strings.TrimSpace(enc), "/")
		c := Codec{Name: parts[0]}
		if len(parts) > 1 {
			r, err := strconv.ParseUint(parts[1], 10, 32)
			if err == nil {
				c.ClockRate = uint32(r)
			}
		}
		rtpmap[pt] = c
	}
	var out []Codec
	for _, f := range md.MediaName.Formats {
		n, err := strconv.ParseUint(f, 10, 8)
		if err != nil || n > 127 {
			continue
		}
		c, ok := rtpmap[f]
		switch {
		case ok:
		case n == 0:
			c = PCMU
		case n == 8:
			c = PCMA
		default:
			continue
		}
		c.PayloadType, c.Params = uint8(n), fmtp[f]
		out = append(out, c)
	}
	return out
}

// known returns the canonical form of a codec we speak (PCMU, PCMA or
// G722 at their 8000 RTP clock rate; a static payload type without rtpmap
// has rate 0; opus at 48000 with the peer's payload type and fmtp).
func known(c Codec) (Codec, bool) {
	if c.IsOpus() {
		if c.ClockRate != Opus.ClockRate || c.PayloadType < 35 { // 0-34: static types
			return c, false
		}
		return Codec{PayloadType: c.PayloadType, Name: Opus.Name, ClockRate: Opus.ClockRate, Params: c.Params}, true
	}
	if c.ClockRate != 8000 && c.ClockRate != 0 {
		return c, false
	}
	for _, k := range []Codec{PCMU, PCMA, G722} {
		if strings.EqualFold(c.Name, k.Name) {
			return Codec{PayloadType: c.PayloadType, Name: k.Name, ClockRate: 8000}, true
		}
	}
	return c, false
}

func isTelephoneEvent(c Codec) bool {
	return strings.EqualFold(c.Name, "telephone-event") && c.ClockRate >= 8000
}

// pickDTMF sets the peer's telephone-event of params: the one at the
// audio codec's clock rate (RFC 4733 section 2.1), else the first offered
// at another rate (some peers offer telephone-event/8000 beside Opus).
func pickDTMF(params *MediaParams, codecs []Codec) {
	params.DTMFPayloadType, params.DTMFClockRate = 0, 0
	for _, c := range codecs {
		if !isTelephoneEvent(c) {
			continue
		}
		if c.ClockRate == params.Codec.ClockRate || params.DTMFPayloadType == 0 {
			params.DTMFPayloadType, params.DTMFClockRate = c.PayloadType, c.ClockRate
		}
		if c.ClockRate == params.Codec.ClockRate {
			return
		}
	}
}

// opusPtime keeps Opus's packet interval to a frame size it has: 10, 20,
// 40 or 60 ms (RFC 6716 section 2.1.4), 20 ms otherwise.
func opusPtime(d time.Duration) time.Duration {
	switch d {
	case 10 * time.Millisecond, 20 * time.Millisecond, 40 * time.Millisecond, 60 * time.Millisecond:
		return d
	}
	return defaultPtime
}

// negotiate picks the audio codec and the offerer's telephone-event
// payload type. prefs is the called number's codec preference (names from
// CodecNames, best first; codecs it leaves out are not used); without one
// the best codec both sides have wins: Opus, else G.722 (both wideband),
// else the offerer's first G.711.
func (p *parsedSDP) negotiate(prefs []string) (MediaParams, error) {
	return p.negotiateAt(prefs, 0)
}

// negotiateAt is negotiate among the codecs of one audio rate (a
// re-offer keeps the call's), or all of them when rate is 0.
func (p *parsedSDP) negotiateAt(prefs []string, rate int) (MediaParams, error) {
	if p.audio < 0 {
		return MediaParams{}, errNoAudio
	}
	params := p.params
	rank := func(c Codec) int {
		if rate != 0 && c.AudioRate() != rate {
			return -1
		}
		if len(prefs) == 0 {
			switch {
			case c.IsOpus():
				return 0
			case c.Wideband():
				return 1
			}
			return 2
		}
		for i, n := range prefs {
			if strings.EqualFold(n, c.Name) {
				return i
			}
		}
		return -1
	}
	best := -1
	for _, c := range p.codecs {
		k, ok := known(c)
		if !ok {
			continue
		}
		if r := rank(k); r >= 0 && (best < 0 || r < best) {
			params.Codec, best = k, r
		}
	}
	if best < 0 {
		return MediaParams{}, errNoCommonCodec
	}
	pickDTMF(&params, p.codecs)
	if params.Codec.IsOpus() {
		params.Ptime = opusPtime(params.Ptime)
	}
	return params, nil
}

// localSDP is our side of a session: a fixed session id and a version
// that increases each time the description changes (RFC 3264 section 8).
type localSDP struct {
	sessionID uint64
	version   uint64
	last      []byte // body without the o= line, to detect changes
	body      []byte
}

func newLocalSDP(id uint64) *localSDP {
	return &localSDP{sessionID: id, version: id}
}

// answer builds our answer to remote p, with our media at local (its
// address replaced by publicIP when valid), the negotiated params and our
// direction. It returns the same bytes (same version) when nothing changed.
func (l *localSDP) answer(p *parsedSDP, params MediaParams, local netip.AddrPort, publicIP netip.Addr, dir Direction) ([]byte, error) {
	ip := local.Addr()
	if publicIP.IsValid() {
		ip = publicIP
	}
	ip = ip.Unmap()
	addrType := "IP4"
	if ip.Is6() {
		addrType = "IP6"
	}
	conn := &sdp.ConnectionInformation{NetworkType: "IN", AddressType: addrType, Address: &sdp.Address{Address: ip.String()}}
	sd := &sdp.SessionDescription{
		Origin:                sdp.Origin{Username: "-", SessionID: l.sessionID, NetworkType: "IN", AddressType: addrType, UnicastAddress: ip.String()},
		SessionName:           "switchboard",
		ConnectionInformation: conn,
		TimeDescriptions:      []sdp.TimeDescription{{}},
	}
	for i, om := range p.media {
		if i != p.audio {
			// RFC 3264 section 6: reject streams we do not take with port 0.
			protos := strings.Split(om.proto, "/")
			formats := om.formats
			if len(formats) > 1 {
				formats = formats[:1]
			}
			sd.MediaDescriptions = append(sd.MediaDescriptions, &sdp.MediaDescription{MediaName: sdp.MediaName{Media: om.media, Port: sdp.RangedPort{Value: 0}, Protos: protos, Formats: formats}})
			continue
		}
		md := &sdp.MediaDescription{MediaName: sdp.MediaName{Media: "audio", Port: sdp.RangedPort{Value: int(local.Port())}, Protos: strings.Split(om.proto, "/")}}
		appendCodec(md, params.Codec)
		if params.DTMFPayloadType != 0 {
			appendDTMF(md, params.DTMFPayloadType, params.DTMFClockRate)
		}
		md.WithValueAttribute("ptime", strconv.Itoa(int(params.Ptime/time.Millisecond)))
		appendCrypto(md, params.SRTP)
		md.WithPropertyAttribute(string(dir))
		sd.MediaDescriptions = append(sd.MediaDescriptions, md)
	}
	return l.finish(sd)
}

// offer builds an offer (used by placed calls, the Softphone and delayed
// offers); sec, when set, offers SDES keys (srtp.go).
func (l *localSDP) offer(local netip.AddrPort, codecs []Codec, dtmfPT uint8, ptime time.Duration, dir Direction, sec *offerCrypto) ([]byte, error) {
	ip := local.Addr().Unmap()
	addrType := "IP4"
	if ip.Is6() {
		addrType = "IP6"
	}
	sd := &sdp.SessionDescription{
		Origin:                sdp.Origin{Username: "-", SessionID: l.sessionID, NetworkType: "IN", AddressType: addrType, UnicastAddress: ip.String()},
		SessionName:           "switchboard",
		ConnectionInformation: &sdp.ConnectionInformation{NetworkType: "IN", AddressType: addrType, Address: &sdp.Address{Address: ip.String()}},
		TimeDescriptions:      []sdp.TimeDescription{{}},
	}
	md := &sdp.MediaDescription{MediaName: sdp.MediaName{Media: "audio", Port: sdp.RangedPort{Value: int(local.Port())}, Protos: sec.protos()}}
	for _, c := range codecs {
		appendCodec(md, c)
	}
	if dtmfPT != 0 {
		appendDTMF(md, dtmfPT, 8000)
	}
	if ptime > 0 {
		md.WithValueAttribute("ptime", strconv.Itoa(int(ptime/time.Millisecond)))
	}
	sec.append(md)
	md.WithPropertyAttribute(string(dir))
	sd.MediaDescriptions = append(sd.MediaDescriptions, md)
	return l.finish(sd)
}

func appendCodec(md *sdp.MediaDescription, c Codec) {
	md.MediaName.Formats = append(md.MediaName.Formats, strconv.Itoa(int(c.PayloadType)))
	if c.IsOpus() {
		md.WithValueAttribute("rtpmap", fmt.Sprintf("%d opus/48000/2", c.PayloadType))
		md.WithValueAttribute("fmtp", fmt.Sprintf("%d %s", c.PayloadType, opusFmtp))
		return
	}
	md.WithValueAttribute("rtpmap", fmt.Sprintf("%d %s/%d", c.PayloadType, c.Name, c.ClockRate))
}

func appendDTMF(md *sdp.MediaDescription, pt uint8, rate uint32) {
	if rate == 0 {
		rate = 8000
	}
	md.MediaName.Formats = append(md.MediaName.Formats, strconv.Itoa(int(pt)))
	md.WithValueAttribute("rtpmap", fmt.Sprintf("%d telephone-event/%d", pt, rate))
	md.WithValueAttribute("fmtp", fmt.Sprintf("%d 0-16", pt))
}

func (l *localSDP) finish(sd *sdp.SessionDescription) ([]byte, error) {
	sd.Origin.SessionVersion = 0
	probe, err := sd.Marshal()
	if err != nil {
		return nil, fmt.Errorf("marshal sdp: %w", err)
	}
	if l.body != nil && bytes.Equal(probe, l.last) {
		return l.body, nil
	}
	if l.body != nil {
		l.version++
	}
	sd.Origin.SessionVersion = l.version
	body, err := sd.Marshal()
	if err != nil {
		return nil, fmt.Errorf("marshal sdp: %w", err)
	}
	l.last, l.body = probe, body
	return body, nil
}

// answerMatch reads the peer's answer to our offer and picks the codec it
// chose (its first format that we offered).
func answerMatch(body []byte, offered []Codec) (MediaParams, error) {
	p, err := parseSDP(body)
	if err != nil {
		return MediaParams{}, err
	}
	if p.audio < 0 {
		return MediaParams{}, errNoAudio
	}
	params := p.params
	found := false
	for _, c := range p.codecs {
		if found || isTelephoneEvent(c) {
			continue
		}
		g, ok := known(c)
		if !ok {
			continue
		}
		for _, o := range offered {
			if strings.EqualFold(o.Name, g.Name) {
				params.Codec, found = g, true
				break
			}
		}
	}
	if !found {
		return MediaParams{}, errNoCommonCodec
	}
	pickDTMF(&params, p.codecs)
	if params.Codec.IsOpus() {
		params.Ptime = opusPtime(params.Ptime)
	}
	return params, nil
}
