package call

import (
	"strconv"
	"time"

	"switchboard/media"
	"switchboard/media/opus"
	"switchboard/sip"
)

// The codecs of a SIP leg above 8 kHz: G.722 (decoded by the leg after
// the session's coded jitter buffer) and Opus (decoded by the session
// with the leg's libopus codec).

// opusRate is the rate an Opus leg decodes to and encodes from: the
// model's 24 kHz, so the audio path between them copies.
const opusRate = 24000

// opusBitrate is the leg's Opus bitrate unless the peer asks for less: a
// clean 24 kHz voice (a browser call uses the same).
const opusBitrate = 32000

// opusComplexity is the leg's Opus encoder complexity (0-10): 5 costs
// about half of libopus's default 9 per frame (docs/benchmarks.md) for a
// small loss in quality, and an appliance encodes one stream per call.
const opusComplexity = 5

// mediaCodec is the media codec of a negotiated SIP codec.
func mediaCodec(c sip.Codec) (media.Codec, bool) {
	if c.IsOpus() {
		return media.OpusCodec(c.PayloadType), true
	}
	return media.CodecByPayloadType(c.PayloadType)
}

// openOpus makes the call's Opus decoder and encoder at 24 kHz, the
// encoder within what the peer's fmtp asks (RFC 7587 section 6.1:
// maxaveragebitrate, maxplaybackrate).
func (l *SIPLeg) openOpus(c sip.Codec) error {
	var err error
	if l.opusDec, err = opus.NewDecoder(opusRate); err != nil {
		return err
	}
	if l.opusEnc, err = opus.NewEncoder(opusRate, opusBitrate); err != nil {
		l.closeOpus()
		return err
	}
	if err := l.opusEnc.SetComplexity(opusComplexity); err != nil {
		l.log.Debug().Err(err).Msg("opus complexity not applied")
	}
	if v, ok := c.FormatParam("maxaveragebitrate"); ok {
		if n, err := strconv.Atoi(v); err == nil && n >= 6000 && n < opusBitrate {
			if err := l.opusEnc.SetBitrate(n); err != nil {
				l.log.Debug().Err(err).Msg("opus bitrate not applied")
			}
		}
	}
	if v, ok := c.FormatParam("maxplaybackrate"); ok {
		if n, err := strconv.Atoi(v); err == nil && n >= 8000 && n < opusRate {
			if err := l.opusEnc.SetMaxPlaybackRate(n); err != nil {
				l.log.Debug().Err(err).Msg("opus playback rate not applied")
			}
		}
	}
	return nil
}

// closeOpus frees the Opus codec (after the session stopped using it).
func (l *SIPLeg) closeOpus() {
	if l.opusEnc != nil {
		_ = l.opusEnc.Close()
	}
	if l.opusDec != nil {
		_ = l.opusDec.Close()
	}
}

// onOpus runs on the media goroutine for every packet of an Opus call,
// decoded (or concealed) at 24 kHz by the session.
func (l *SIPLeg) onOpus(pcm []int16, _ media.FrameStatus) {
	l.inband(pcm)
	l.sink.Audio(pcm)
}

// inband hands a wideband leg's audio to the key sources: resampled to
// 8 kHz for the in-band detector when it is on, else nothing (which
// closes RFC 4733 events that lost their end).
func (l *SIPLeg) inband(pcm []int16) {
	if l.down == nil {
		l.keys.Audio(nil, time.Now())
		return
	}
	l.inbandPC = l.down.Process(l.inbandPC[:0], pcm)
	l.keys.Audio(l.inbandPC, time.Now())
}

// onG722 runs on the media goroutine for every inbound frame of a G.722
// call: received frames are decoded in order; a frame the jitter buffer
// filled (loss) plays as silence and leaves the decoder's state alone.
func (l *SIPLeg) onG722(payload []byte, st media.FrameStatus) {
	if st == media.FramePlayed {
		l.decBuf = l.dec.Decode(l.decBuf[:0], payload)
	} else {
		l.decBuf = l.decBuf[:0]
		for range 2 * len(payload) {
			l.decBuf = append(l.decBuf, 0)
		}
	}
	l.inband(l.decBuf)
	l.sink.Audio(l.decBuf)
}
