package sipleg

import (
	"strconv"

	"switchboard/media"
	"switchboard/sip"
)

// mediaCodec is the media codec of a negotiated SIP codec.
func mediaCodec(c sip.Codec) (media.Codec, bool) {
	if c.IsOpus() {
		return media.OpusCodec(c.PayloadType), true
	}
	return media.CodecByPayloadType(c.PayloadType)
}

// opusOptions are the encoder settings an Opus peer's fmtp asks for
// (RFC 7587 section 6.1: maxaveragebitrate, maxplaybackrate); nothing
// for the other codecs.
func opusOptions(c sip.Codec) media.EncoderOptions {
	var o media.EncoderOptions
	if !c.IsOpus() {
		return o
	}
	if v, ok := c.FormatParam("maxaveragebitrate"); ok {
		if n, err := strconv.Atoi(v); err == nil {
			o.Bitrate = n
		}
	}
	if v, ok := c.FormatParam("maxplaybackrate"); ok {
		if n, err := strconv.Atoi(v); err == nil {
			o.MaxPlaybackRate = n
		}
	}
	return o
}
