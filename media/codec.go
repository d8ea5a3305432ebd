package media

import (
	"fmt"
	"sync"

	"github.com/zaf/g711"
)

// Static RTP payload types of RFC 3551 used by the phone leg.
const (
	PayloadTypePCMU uint8 = 0
	PayloadTypePCMA uint8 = 8
	// PayloadTypeG722 is G.722 (RFC 3551: clock rate 8000 for 16 kHz audio).
	PayloadTypeG722 uint8 = 9
	// PayloadTypeCN is RFC 3389 comfort noise; inbound CN packets are ignored.
	PayloadTypeCN uint8 = 13
)

// ClockRate is the sampling rate of G.711, the RTP clock rate of G.711
// and G.722, and the rate of the PCM this package's pipeline handles.
const ClockRate = 8000

// Codec describes a codec of the phone leg as it appears in SDP
// (a=rtpmap) and in RTP: a G.711 variant, or G.722. Both have one byte per
// RTP timestamp tick, so jitter buffers, playouts and pacers handle their
// bytes alike; G.722's bytes are coded and decoded by the stateful
// G722Encoder and G722Decoder of the call, never by Codec's methods, and
// are never transcoded. The zero value is not usable; use PCMU, PCMA or
// G722.
type Codec struct {
	// PayloadType is the static RTP payload type (0, 8 or 9).
	PayloadType uint8
	// Name is the rtpmap encoding name ("PCMU", "PCMA" or "G722").
	Name string
	// ClockRate is the RTP clock rate (8000).
	ClockRate int
	ulaw      bool
	g722      bool
	opus      bool
}

// G722 is G.722 at 64 kbit/s, payload type 9: 16 kHz audio on an RTP
// clock of 8000 (RFC 3551 section 4.5.2).
var G722 = Codec{PayloadType: PayloadTypeG722, Name: "G722", ClockRate: ClockRate, g722: true}

// IsG722 reports whether c is G.722.
func (c Codec) IsG722() bool { return c.g722 }

// IsG711 reports whether c is PCMU or PCMA (by name: a Codec that is
// neither, such as a deferred session's "PCM" source, is not A-law).
func (c Codec) IsG711() bool { return c.Name == PCMU.Name || c.Name == PCMA.Name }

// IsOpus reports whether c is Opus.
func (c Codec) IsOpus() bool { return c.opus }

// AudioRate is the sampling rate of c's audio: 16000 for G.722, 8000 for
// G.711, 48000 for Opus (whose decoder renders any of its rates).
func (c Codec) AudioRate() int {
	switch {
	case c.g722:
		return G722Rate
	case c.opus:
		return OpusClockRate
	}
	return ClockRate
}

// PCMU is G.711 mu-law, payload type 0.
var PCMU = Codec{PayloadType: PayloadTypePCMU, Name: "PCMU", ClockRate: ClockRate, ulaw: true}

// PCMA is G.711 A-law, payload type 8.
var PCMA = Codec{PayloadType: PayloadTypePCMA, Name: "PCMA", ClockRate: ClockRate}

// CodecByPayloadType returns the codec of a static payload type.
func CodecByPayloadType(pt uint8) (Codec, bool) {
	switch pt {
	case PayloadTypePCMU:
		return PCMU, true
	case PayloadTypePCMA:
		return PCMA, true
	case PayloadTypeG722:
		return G722, true
	}
	return Codec{}, false
}

// CodecByName returns the codec of an rtpmap encoding name
// (case-sensitive as SDP writes it: "PCMU", "PCMA", "G722").
func CodecByName(name string) (Codec, error) {
	switch name {
	case "PCMU":
		return PCMU, nil
	case "PCMA":
		return PCMA, nil
	case "G722":
		return G722, nil
	}
	return Codec{}, fmt.Errorf("%w: %q", errUnknownCodec, name)
}

// String returns the encoding name.
func (c Codec) String() string { return c.Name }

// SilenceByte is the encoded value of a zero sample (0xFF for PCMU, 0xD5 for
// PCMA; for G.722 the code its encoder settles on for silence).
func (c Codec) SilenceByte() byte {
	if c.g722 {
		return g722Silence()
	}
	if c.ulaw {
		return g711.EncodeUlawFrame(0)
	}
	return g711.EncodeAlawFrame(0)
}

// EncodeFrame appends the G.711 encoding of pcm (one byte per sample) to dst
// and returns the extended slice. It does not allocate when dst has capacity.
// For G.722, which needs its call's encoder, it appends silence.
// Encoding is a table lookup; the tables are built from github.com/zaf/g711
// on first use, so that library stays the definition of the code words.
func (c Codec) EncodeFrame(dst []byte, pcm []int16) []byte {
	n := len(dst)
	dst = grow(dst, len(pcm))
	out := dst[n : n+len(pcm)]
	if c.g722 {
		fill(out, g722Silence())
		return dst
	}
	if c.ulaw {
		t := ulawTable()
		for i, s := range pcm {
			out[i] = t[uint16(s)>>ulawShift]
		}
	} else {
		t := alawTable()
		for i, s := range pcm {
			out[i] = t[uint16(s)>>alawShift]
		}
	}
	return dst
}

// G.711 discards the low bits of a 16-bit sample before encoding: mu-law
// works on 14 bits and A-law on 12 (ITU-T G.711; zaf/g711 shifts them out
// first thing, after complementing negative samples, which commutes with an
// arithmetic shift). So the encoders are tables indexed by the top bits of
// the sample as unsigned: 16 KiB for mu-law and 4 KiB for A-law, small
// enough to stay in L1 next to the resampler. TestEncodeTablesMatchG711
// checks every one of the 65536 inputs against zaf/g711.
const (
	ulawShift = 2
	alawShift = 4
)

var (
	ulawTable = sync.OnceValue(func() *[1 << (16 - ulawShift)]byte {
		var t [1 << (16 - ulawShift)]byte
		for i := range t {
			t[i] = g711.EncodeUlawFrame(int16(uint16(i << ulawShift)))
		}
		return &t
	})
	alawTable = sync.OnceValue(func() *[1 << (16 - alawShift)]byte {
		var t [1 << (16 - alawShift)]byte
		for i := range t {
			t[i] = g711.EncodeAlawFrame(int16(uint16(i << alawShift)))
		}
		return &t
	})
)

// DecodeFrame appends the linear PCM of a G.711 payload to dst and returns
// the extended slice. It does not allocate when dst has capacity. For
// G.722, which needs its call's decoder, it appends silence.
func (c Codec) DecodeFrame(dst []int16, payload []byte) []int16 {
	n := len(dst)
	dst = grow(dst, len(payload))
	out := dst[n : n+len(payload)]
	if c.g722 {
		clear(out)
		return dst
	}
	if c.ulaw {
		for i, b := range payload {
			out[i] = g711.DecodeUlawFrame(b)
		}
	} else {
		for i, b := range payload {
			out[i] = g711.DecodeAlawFrame(b)
		}
	}
	return dst
}

// grow extends s by n elements, reallocating only when capacity is short.
func grow[T any](s []T, n int) []T {
	if cap(s)-len(s) >= n {
		return s[:len(s)+n]
	}
	ns := make([]T, len(s)+n, 2*len(s)+n)
	copy(ns, s)
	return ns
}

// fill sets every element of s to v.
func fill[T int16 | byte](s []T, v T) {
	if v == 0 {
		clear(s)
		return
	}
	for i := range s {
		s[i] = v
	}
}
