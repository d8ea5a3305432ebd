package main

import (
	"context"
	"fmt"
	"sync"
	"time"

	"switchboard/dtmf"
	"switchboard/media"
)

// Key timing of sent digits: each key press lasts dtmf.DefaultKeyDuration
// and the next one starts dtmfGap after the previous one ended.
const dtmfGap = 100 * time.Millisecond

// dtmfInfoInterval is the pause between two SIP INFO key presses.
const dtmfInfoInterval = 200 * time.Millisecond

// eventSender sends digits as RFC 4733 telephone-events through the
// session's pacer (media.EventSource): each packet takes the place of one
// audio frame, so sequence numbers and the clock stay those of the audio
// stream. All packets of one key press carry the RTP timestamp of the
// frame it starts on (RFC 4733 §2.5.1.1).
type eventSender struct {
	mu      sync.Mutex
	pt      uint8
	opts    dtmf.SendOptions
	digits  []byte
	cur     []dtmf.EventPacket
	next    int
	ts      uint32
	wait    int // frames of audio before the next key press
	gap     int
	onDigit func(d byte, at time.Time)
	done    chan struct{}
	closed  bool
}

var _ media.EventSource = (*eventSender)(nil)

// newEventSender prepares digits for payload type pt at the given ptime.
func newEventSender(digits string, pt uint8, ptime time.Duration, onDigit func(byte, time.Time)) *eventSender {
	gap := max(1, int(dtmfGap/ptime))
	return &eventSender{
		pt: pt, opts: dtmf.SendOptions{Interval: ptime}, digits: []byte(digits), gap: gap,
		onDigit: onDigit, done: make(chan struct{}),
	}
}

// NextPacket implements media.EventSource; it runs on the media goroutine.
func (s *eventSender) NextPacket(ts uint32, p *media.OutPacket) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.wait > 0 {
		s.wait--
		return false
	}
	if s.cur == nil {
		if len(s.digits) == 0 {
			if !s.closed {
				s.closed = true
				close(s.done)
			}
			return false
		}
		pkts, err := dtmf.AppendEventPackets(nil, s.digits[0], dtmf.DefaultKeyDuration, s.opts)
		if err != nil { // digits were validated before dialing
			s.digits = s.digits[1:]
			return false
		}
		s.cur, s.next, s.ts = pkts, 0, ts
	}
	e := s.cur[s.next]
	p.PayloadType, p.Marker, p.Timestamp = s.pt, e.Marker, s.ts
	p.Payload = e.Payload.AppendTo(p.Payload[:0])
	s.next++
	if s.next == len(s.cur) {
		if s.onDigit != nil {
			s.onDigit(s.digits[0], time.Now())
		}
		s.digits, s.cur, s.wait = s.digits[1:], nil, s.gap
	}
	return true
}

// Done is closed once every digit was sent.
func (s *eventSender) Done() <-chan struct{} { return s.done }

// infoSender is what sendInfoDigits needs of the call.
type infoSender interface {
	SendInfo(ctx context.Context, contentType string, body []byte) error
}

// sendInfoDigits sends each digit as SIP INFO application/dtmf-relay, one
// every dtmfInfoInterval, until done or ctx ends.
func sendInfoDigits(ctx context.Context, c infoSender, digits string, report func(d byte, err error)) {
	ms := dtmf.DefaultKeyDuration.Milliseconds()
	for i := range len(digits) {
		if i > 0 {
			t := time.NewTimer(dtmfInfoInterval)
			select {
			case <-ctx.Done():
				t.Stop()
				return
			case <-t.C:
			}
		}
		body := fmt.Appendf(nil, "Signal=%c\r\nDuration=%d\r\n", digits[i], ms)
		rctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		err := c.SendInfo(rctx, dtmf.ContentTypeDTMFRelay, body)
		cancel()
		if ctx.Err() != nil {
			return
		}
		report(digits[i], err)
	}
}
