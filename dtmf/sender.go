package dtmf

import (
	"errors"
	"sync"
	"time"
)

// DefaultKeyGap is the silence between two sent keys. Receivers need
// 40 ms between presses (ITU-T Q.24 and the usual IVR tolerances); a
// 100 ms gap is safe for slow IVRs and still sends ten keys in two
// seconds.
const DefaultKeyGap = 100 * time.Millisecond

// MaxSendDigits is the longest digit string Send takes.
const MaxSendDigits = 64

// ErrDigits means a digit string to send is empty, too long or holds
// something else than 0-9, *, # and A-D.
var ErrDigits = errors.New("dtmf: digits must be 1-64 of 0-9, *, #, A-D")

// CheckDigits validates a digit string to send.
func CheckDigits(digits string) error {
	if len(digits) == 0 || len(digits) > MaxSendDigits {
		return ErrDigits
	}
	for i := 0; i < len(digits); i++ {
		if !ValidDigit(digits[i]) {
			return ErrDigits
		}
	}
	return nil
}

// Sender sends digit strings as RFC 4733 telephone-events in the place of
// audio frames: a pacer asks NextEvent once per frame, so the events share
// the audio stream's sequence numbers and clock. Every key lasts
// DefaultKeyDuration (one packet per interval, then the end packet
// EndPackets times) and keys are DefaultKeyGap apart; all packets of one
// key carry the RTP timestamp of the frame it started on (RFC 4733
// §2.5.1.1). It is safe for concurrent use; it satisfies
// media.EventSource.
type Sender struct {
	pt uint8

	mu    sync.Mutex
	opts  SendOptions
	queue []*sendReq
	cur   []EventPacket
	next  int
	ts    uint32
	wait  int // frames of audio before the next key
	// finished is closed once the gap after its last key has passed: the
	// digits are sent when the line is back to audio.
	finished chan struct{}
	payload  []byte
	closed   bool
}

type sendReq struct {
	digits  string
	onDigit func(d byte, at time.Time)
	done    chan struct{}
}

// NewSender returns a sender for telephone-event payload type pt.
func NewSender(pt uint8, opts SendOptions) *Sender {
	if opts.Interval <= 0 {
		opts.Interval = DefaultSendInterval
	}
	return &Sender{pt: pt, opts: opts}
}

// SetInterval follows a new packet interval (the call's ptime changed).
func (s *Sender) SetInterval(d time.Duration) {
	if d <= 0 {
		return
	}
	s.mu.Lock()
	s.opts.Interval = d
	s.mu.Unlock()
}

// Send queues digits after those already queued. onDigit, when set, is
// called as each key's last packet goes out; the returned channel is
// closed once every digit was sent and the gap after the last one passed
// (the line is back to audio), or the sender closed.
func (s *Sender) Send(digits string, onDigit func(d byte, at time.Time)) (<-chan struct{}, error) {
	if err := CheckDigits(digits); err != nil {
		return nil, err
	}
	r := &sendReq{digits: digits, onDigit: onDigit, done: make(chan struct{})}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		close(r.done)
		return r.done, nil
	}
	s.queue = append(s.queue, r)
	return r.done, nil
}

// NextEvent hands the pacer the packet of this frame tick, if any: ts is
// the RTP timestamp the tick's audio would carry. The payload is valid
// until the next call.
func (s *Sender) NextEvent(ts uint32) (pt uint8, marker bool, evTS uint32, payload []byte, ok bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.wait > 0 {
		s.wait--
		if s.wait == 0 && s.finished != nil {
			close(s.finished)
			s.finished = nil
		}
		return 0, false, 0, nil, false
	}
	if s.cur == nil {
		if len(s.queue) == 0 {
			return 0, false, 0, nil, false
		}
		r := s.queue[0]
		pkts, err := AppendEventPackets(nil, r.digits[0], DefaultKeyDuration, s.opts)
		if err != nil { // digits were checked by Send
			s.advanceLocked()
			return 0, false, 0, nil, false
		}
		s.cur, s.next, s.ts = pkts, 0, ts
	}
	e := s.cur[s.next]
	s.payload = e.Payload.AppendTo(s.payload[:0])
	s.next++
	if s.next == len(s.cur) {
		r := s.queue[0]
		if r.onDigit != nil {
			r.onDigit(r.digits[0], time.Now())
		}
		s.advanceLocked()
		s.cur = nil
		s.wait = max(1, int((DefaultKeyGap+s.opts.Interval-1)/s.opts.Interval))
	}
	return s.pt, e.Marker, s.ts, s.payload, true
}

// advanceLocked drops the head request's first digit; a request done
// is finished after the gap that follows.
func (s *Sender) advanceLocked() {
	r := s.queue[0]
	r.digits = r.digits[1:]
	if r.digits == "" {
		s.finished = r.done
		s.queue = s.queue[1:]
	}
}

// Close drops what is queued (its channels close) and refuses nothing:
// later Sends return closed channels. It is idempotent.
func (s *Sender) Close() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return
	}
	s.closed = true
	if s.finished != nil {
		close(s.finished)
		s.finished = nil
	}
	for _, r := range s.queue {
		close(r.done)
	}
	s.queue, s.cur = nil, nil
}

// Tones renders digits as in-band DTMF tones at rate, each key
// DefaultKeyDuration long and followed by DefaultKeyGap of silence: what
// is sent to a peer that negotiated no telephone-event.
func Tones(digits string, rate int) ([]int16, error) {
	if err := CheckDigits(digits); err != nil {
		return nil, err
	}
	gen := NewToneGenerator(ToneOptions{SampleRate: rate})
	per := int(int64(DefaultKeyDuration) * int64(rate) / int64(time.Second))
	gap := int(int64(DefaultKeyGap) * int64(rate) / int64(time.Second))
	out := make([]int16, len(digits)*(per+gap))
	for i := 0; i < len(digits); i++ {
		if err := gen.Start(digits[i]); err != nil {
			return nil, ErrDigits
		}
		gen.Generate(out[i*(per+gap) : i*(per+gap)+per])
		gen.Stop()
	}
	return out, nil
}
