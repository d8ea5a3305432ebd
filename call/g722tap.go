package call

import "switchboard/media"

// g722Tap gives the call's taps (health, recording) the audio of a G.722
// leg, which they cannot read from its code words: inbound, the frame the
// leg has just decoded for the conversation (no second decode); outbound,
// the bytes the pacer sent, decoded by a decoder of its own that follows
// exactly what the caller's decoder follows. Both go on at 16 kHz through
// a media.RateTap, which hands the taps 8 kHz PCM and PCMU as for a
// narrowband call. Frames without audio (idle, held, telephone-events)
// pass as they are: their length is already counted at 8 kHz.
type g722Tap struct {
	leg    *SIPLeg
	rate   *media.RateTap
	inner  media.Tap
	dec    *media.G722Decoder
	outPCM []int16
}

var _ media.Tap = (*g722Tap)(nil)

func newG722Tap(leg *SIPLeg, tap media.Tap) (*g722Tap, error) {
	rate, err := media.NewRateTap(tap, media.G722Rate, media.G722Rate)
	if err != nil {
		return nil, err
	}
	return &g722Tap{leg: leg, rate: rate, inner: tap, dec: media.NewG722Decoder(), outPCM: make([]int16, 0, 2*media.G722Rate/50)}, nil
}

// Inbound runs after the leg's onG722 decoded the same frame into decBuf.
func (t *g722Tap) Inbound(f media.Frame) {
	if f.Coded == nil {
		t.inner.Inbound(f)
		return
	}
	f.PCM, f.Coded = t.leg.decBuf, nil
	t.rate.Inbound(f)
}

// Outbound decodes the G.722 bytes the pacer sent.
func (t *g722Tap) Outbound(f media.Frame) {
	if f.Coded == nil || f.Event {
		t.inner.Outbound(f)
		return
	}
	t.outPCM = t.dec.Decode(t.outPCM[:0], f.Coded)
	f.PCM, f.Coded = t.outPCM, nil
	t.rate.Outbound(f)
}
