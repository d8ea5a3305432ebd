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
	// PayloadTypeCN is RFC 3389 comfort noise; inbound CN packets are ignored.
	PayloadTypeCN uint8 = 13
)

// ClockRate is the sampling rate of G.711 and of all PCM the phone side of
// this package handles.
const ClockRate = 8000

// Codec describes a G.711 variant as it appears in SDP (a=rtpmap) and in RTP.
// The zero value is not usable; use PCMU or PCMA.
type Codec struct {
	// PayloadType is the static RTP payload type (0 or 8).
	PayloadType uint8
	// Name is the rtpmap encoding name ("PCMU" or "PCMA").
	Name string
	// ClockRate is the RTP clock rate (8000).
	ClockRate int
	ulaw      bool
}

// PCMU is G.711 mu-law, payload type 0.
var PCMU = Codec{PayloadType: PayloadTypePCMU, Name: "PCMU", ClockRate: ClockRate, ulaw: true}

// PCMA is G.711 A-law, payload type 8.
var PCMA = Codec{PayloadType: PayloadTypePCMA, Name: "PCMA", ClockRate: ClockRate}

// CodecByPayloadType returns the G.711 codec of a static payload type.
func CodecByPayloadType(pt uint8) (Codec, bool) {
	switch pt {
	case PayloadTypePCMU:
		return PCMU, true
	case PayloadTypePCMA:
		return PCMA, true
	}
	return Codec{}, false
}

// CodecByName returns the G.711 codec of an rtpmap encoding name
// (case-sensitive as SDP writes it: "PCMU", "PCMA").
func CodecByName(name string) (Codec, error) {
	switch name {
	case "PCMU":
		return PCMU, nil
	case "PCMA":
		return PCMA, nil
	}
	return Codec{}, fmt.Errorf("%w: %q", errUnknownCodec, name)
}

// String returns the encoding name.
func (c Codec) String() string { return c.Name }

// SilenceByte is the encoded value of a zero sample (0xFF for PCMU, 0xD5 for PCMA).
func (c Codec) SilenceByte() byte {
	if c.ulaw {
		return g711.EncodeUlawFrame(0)
	}
	return g711.EncodeAlawFrame(0)
}

// EncodeFrame appends the G.711 encoding of pcm (one byte per sample) to dst
// and returns the extended slice. It does not allocate when dst has capacity.
// Encoding is a table lookup; the tables are built from github.com/zaf/g711
// on first use, so that library stays the definition of the code words.
func (c Codec) EncodeFrame(dst []byte, pcm []int16) []byte {
	n := len(dst)
	dst = grow(dst, len(pcm))
	out := dst[n : n+len(pcm)]
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
// the extended slice. It does not allocate when dst has capacity.
func (c Codec) DecodeFrame(dst []int16, payload []byte) []int16 {
	n := len(dst)
	dst = grow(dst, len(payload))
	out := dst[n : n+len(payload)]
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
