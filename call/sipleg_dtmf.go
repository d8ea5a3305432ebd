package call

import (
	"context"
	"sync"
	"time"

	"switchboard/dtmf"
	"switchboard/media"
)

// Digit timing of sent DTMF: each key lasts keyDuration, keys are
// keyGap apart (RFC 4733 and common IVR tolerances: 40 ms minimum).
const (
	keyDuration = 100 * time.Millisecond
	keyGap      = 80 * time.Millisecond
)

// dtmfSender sends digits as RFC 4733 events through the pacer (sharing
// its sequence numbers and clock); it implements media.EventSource.
type dtmfSender struct {
	pt    uint8
	mu    sync.Mutex
	queue []sendStep
	ts    uint32
	inEv  bool
}

// sendStep is one tick of sending: a packet, or a gap (nil payload).
type sendStep struct {
	payload []byte
	marker  bool
	first   bool
	done    chan struct{} // closed after the digit string's last step
}

// NextPacket hands the pacer the next event packet (media.EventSource).
func (s *dtmfSender) NextPacket(ts uint32, p *media.OutPacket) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.queue) == 0 {
		return false
	}
	st := s.queue[0]
	s.queue = s.queue[1:]
	if st.done != nil {
		defer close(st.done)
	}
	if st.payload == nil {
		s.inEv = false
		return false
	}
	if st.first {
		s.ts = ts
	}
	*p = media.OutPacket{PayloadType: s.pt, Marker: st.marker, Timestamp: s.ts, Payload: st.payload}
	return true
}

// enqueue schedules digits; the returned channel closes when they are sent.
func (s *dtmfSender) enqueue(digits string, ptime time.Duration) (<-chan struct{}, error) {
	var steps []sendStep
	for i := 0; i < len(digits); i++ {
		pkts, err := dtmf.AppendEventPackets(nil, digits[i], keyDuration, dtmf.SendOptions{Interval: ptime})
		if err != nil {
			return nil, ErrNoDigits
		}
		for j, p := range pkts {
			steps = append(steps, sendStep{payload: p.Payload.Marshal(), marker: p.Marker, first: j == 0})
		}
		for g := time.Duration(0); g < keyGap; g += ptime {
			steps = append(steps, sendStep{})
		}
	}
	done := make(chan struct{})
	steps = append(steps, sendStep{done: done})
	s.mu.Lock()
	s.queue = append(s.queue, steps...)
	s.mu.Unlock()
	return done, nil
}

// SendDTMF plays digits to the caller: RFC 4733 events when the caller
// negotiated telephone-event, in-band tones otherwise. It returns once
// they are sent.
func (l *SIPLeg) SendDTMF(ctx context.Context, digits string) error {
	sess, sender := l.session(), l.sender
	if sess == nil {
		return ErrNotActive
	}
	ptime := l.in.Media().Ptime
	if ptime == 0 {
		ptime = 20 * time.Millisecond
	}
	var done <-chan struct{}
	if sender != nil {
		var err error
		if done, err = sender.enqueue(digits, ptime); err != nil {
			return err
		}
	} else {
		pcm, err := tones(digits)
		if err != nil {
			return err
		}
		ch := make(chan struct{})
		sess.Playout().Write("dtmf", pcm)
		go func() {
			defer close(ch)
			for sess.Playout().Len() > 0 {
				select {
				case <-ctx.Done():
					return
				case <-time.After(ptime):
				}
			}
		}()
		done = ch
	}
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// tones renders digits as in-band DTMF at 8 kHz.
func tones(digits string) ([]int16, error) {
	gen := dtmf.NewToneGenerator(dtmf.ToneOptions{})
	per := int(int64(keyDuration) * 8000 / int64(time.Second))
	gap := int(int64(keyGap) * 8000 / int64(time.Second))
	out := make([]int16, 0, len(digits)*(per+gap))
	for i := 0; i < len(digits); i++ {
		if err := gen.Start(digits[i]); err != nil {
			return nil, ErrNoDigits
		}
		buf := make([]int16, per)
		gen.Generate(buf)
		gen.Stop()
		out = append(out, buf...)
		out = append(out, make([]int16, gap)...)
	}
	return out, nil
}
