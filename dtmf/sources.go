package dtmf

import (
	"sync"
	"time"
)

// Sources turns what a phone leg receives into key presses, whatever the
// way they arrive: RFC 4733 telephone-events, SIP INFO bodies, and tones
// in the caller's audio (when in-band detection is on). A press that comes
// several ways (a gateway sending both events and tones) goes to out once.
// RTP and INFO may come from different goroutines; Audio runs on the media
// goroutine.
type Sources struct {
	out func(Event)

	mu       sync.Mutex // guards receiver
	receiver *Receiver
	// outMu serializes out and guards merger: one press, one call.
	outMu  sync.Mutex
	merger *Merger

	detector *Detector // nil: no in-band detection; media goroutine only
	evBuf    []Event
}

// NewSources returns the sources of one leg; inband turns the Goertzel
// detector on.
func NewSources(inband bool, out func(Event)) *Sources {
	s := &Sources{out: out, receiver: NewReceiver(ReceiverOptions{}), merger: NewMerger(MergerOptions{})}
	if inband {
		s.detector = NewDetector(DetectorOptions{})
	}
	return s
}

// SetClockRate follows the RTP clock rate of the negotiated
// telephone-event (its a=rtpmap rate: 8000, or 48000 beside Opus), which
// the event durations count in. Call it before the first packet.
func (s *Sources) SetClockRate(rate int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.receiver = NewReceiver(ReceiverOptions{ClockRate: rate})
}

// Inband reports whether tones in the audio are detected.
func (s *Sources) Inband() bool { return s.detector != nil }

// RTP takes one telephone-event packet: its RTP timestamp and payload.
func (s *Sources) RTP(ts uint32, payload []byte, now time.Time) error {
	s.mu.Lock()
	ev, ok, err := s.receiver.Push(ts, payload, now)
	s.mu.Unlock()
	if ok {
		s.emit(ev)
	}
	return err
}

// INFO takes the body of a SIP INFO request.
func (s *Sources) INFO(contentType string, body []byte, now time.Time) error {
	ev, err := ParseINFO(contentType, body, now)
	if err != nil {
		return err
	}
	s.emit(ev)
	return nil
}

// Audio takes one frame of the caller's decoded audio: it runs the
// in-band detector and closes RFC 4733 events whose end packets were lost.
func (s *Sources) Audio(pcm []int16, now time.Time) {
	s.mu.Lock()
	s.receiver.Tick(now)
	s.mu.Unlock()
	if s.detector == nil {
		return
	}
	s.evBuf = s.detector.Process(s.evBuf[:0], pcm, now)
	for _, ev := range s.evBuf {
		s.emit(ev)
	}
}

// emit hands a press to out unless another source already reported it.
func (s *Sources) emit(ev Event) {
	s.outMu.Lock()
	defer s.outMu.Unlock()
	d, ok := normalizeDigit(ev.Digit)
	if !ok {
		return
	}
	ev.Digit = d
	if s.merger.Add(ev) {
		s.out(ev)
	}
}
