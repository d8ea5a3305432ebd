package rtc

import (
	"time"

	sbmedia "switchboard/media"
)

// legTap feeds the call's media.Tap (health, recording), which counts in
// 8 kHz frames and reads outbound audio as G.711: an Opus leg's 24 kHz
// audio is resampled for it, and its outbound frames encoded to PCMU (a
// few hundred nanoseconds a frame). Inbound runs on the reader goroutine,
// outbound on the sender's, each with its own resampler and buffers.
type legTap struct {
	tap           sbmedia.Tap
	in, out       *sbmedia.Resampler // nil for an 8 kHz leg
	inBuf, outBuf []int16
	outCodedBuf   []byte
}

func newLegTap(tap sbmedia.Tap, rate int) (*legTap, error) {
	t := &legTap{tap: tap}
	if rate != sbmedia.ClockRate {
		var err error
		if t.in, err = sbmedia.NewResampler(rate, sbmedia.ClockRate); err != nil {
			return nil, err
		}
		if t.out, err = sbmedia.NewResampler(rate, sbmedia.ClockRate); err != nil {
			return nil, err
		}
	}
	return t, nil
}

// inPCM reports one decoded inbound frame at the leg's rate.
func (t *legTap) inPCM(at time.Time, pcm []int16, st sbmedia.FrameStatus) {
	if t.in != nil {
		t.inBuf = t.in.Process(t.inBuf[:0], pcm)
		pcm = t.inBuf
	}
	t.tap.Inbound(sbmedia.Frame{At: at, Samples: len(pcm), PCM: pcm, Status: st})
}

// inCoded reports one inbound PCMU frame of a passthrough.
func (t *legTap) inCoded(at time.Time, payload []byte) {
	t.tap.Inbound(sbmedia.Frame{At: at, Samples: len(payload), Coded: payload, Codec: sbmedia.PCMU, Status: sbmedia.FramePlayed})
}

// outPCM reports one outbound frame at the leg's rate.
func (t *legTap) outPCM(at time.Time, pcm []int16, speech bool) {
	if t.out != nil {
		t.outBuf = t.out.Process(t.outBuf[:0], pcm)
		pcm = t.outBuf
	}
	t.outCodedBuf = sbmedia.PCMU.EncodeFrame(t.outCodedBuf[:0], pcm)
	t.tap.Outbound(sbmedia.Frame{At: at, Samples: len(pcm), Coded: t.outCodedBuf, Codec: sbmedia.PCMU, Speech: speech})
}

// outCoded reports one outbound PCMU frame.
func (t *legTap) outCoded(at time.Time, payload []byte, speech bool) {
	t.tap.Outbound(sbmedia.Frame{At: at, Samples: len(payload), Coded: payload, Codec: sbmedia.PCMU, Speech: speech})
}
