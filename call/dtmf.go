package call

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/pion/rtp"

	"switchboard/dtmf"
	"switchboard/media"
	"switchboard/sip"
)

// DTMFHandler is what a conversation implements to take the caller's
// keys. Without it the call uses the default policy and drops the digits.
type DTMFHandler interface {
	// DTMFPolicy is the call's policy: model (default), redact or route.
	DTMFPolicy() dtmf.Policy
	// DTMFKey reports each accepted key as it is pressed (for a
	// controller's input_audio_buffer.dtmf_event_received and for tools;
	// the digit is there even under redact).
	DTMFKey(ev dtmf.Event)
	// DTMFText delivers a flush of the buffer as the user text message
	// for the model (already redacted under the redact policy).
	DTMFText(text string)
}

// Inband says when the Goertzel detector listens to the caller's audio.
type Inband string

// DTMFInbandSetter is what a conversation implements to choose in-band
// detection for its calls (an agent's dtmf_inband); "" keeps the
// appliance's Options.Inband.
type DTMFInbandSetter interface {
	DTMFInband() Inband
}

// In-band detection modes.
const (
	// InbandAuto listens when the caller negotiated no telephone-event.
	InbandAuto Inband = "auto"
	// InbandOn always listens, also when telephone-event was negotiated
	// (gateways that send both; the collector keeps one of each press).
	InbandOn Inband = "on"
	// InbandOff never listens.
	InbandOff Inband = "off"
)

// keypad joins the three ways digits arrive (RFC 4733 events, SIP INFO,
// in-band tones) into one collector with the policy's flush rule.
type keypad struct {
	c       *Call
	handler DTMFHandler // nil: digits are only noted

	mu        sync.Mutex
	policy    dtmf.Policy
	receiver  *dtmf.Receiver
	collector *dtmf.Collector
	timer     *time.Timer
	closed    bool

	detector *dtmf.Detector // media goroutine only
	evBuf    []dtmf.Event
}

func newKeypad(c *Call, conv Conversation, offer sip.MediaParams, idle time.Duration, inband Inband) (*keypad, error) {
	k := &keypad{c: c, receiver: dtmf.NewReceiver(dtmf.ReceiverOptions{})}
	if h, ok := conv.(DTMFHandler); ok {
		k.handler = h
		k.policy = h.DTMFPolicy()
	}
	col, err := dtmf.NewCollector(dtmf.CollectorOptions{Policy: k.policy, Buffer: dtmf.BufferOptions{IdleTimeout: idle}})
	if err != nil {
		return nil, err
	}
	k.collector = col
	if s, ok := conv.(DTMFInbandSetter); ok {
		if v := s.DTMFInband(); v != "" {
			inband = v
		}
	}
	// The number's own setting wins over the agent's.
	c.mu.Lock()
	if c.inband != "" {
		inband = c.inband
	}
	c.mu.Unlock()
	if inband == InbandOn || (inband != InbandOff && offer.DTMFPayloadType == 0) {
		k.detector = dtmf.NewDetector(dtmf.DetectorOptions{})
	}
	return k, nil
}

// rtpEvent takes a telephone-event packet (media reader goroutine).
func (k *keypad) rtpEvent(h *rtp.Header, payload []byte) {
	now := time.Now()
	k.mu.Lock()
	ev, ok, err := k.receiver.Push(h.Timestamp, payload, now)
	k.mu.Unlock()
	if err != nil {
		k.c.log.Debug().Err(err).Msg("bad telephone-event packet")
		return
	}
	if ok {
		k.key(ev)
	}
}

// info takes a SIP INFO body.
func (k *keypad) info(in sip.Info) {
	ev, err := dtmf.ParseINFO(in.ContentType, in.Body, time.Now())
	if err != nil {
		k.c.log.Debug().Err(err).Str("content_type", in.ContentType).Msg("INFO without a DTMF key")
		return
	}
	k.key(ev)
}

// audio runs the in-band detector on a decoded frame (media goroutine).
func (k *keypad) audio(pcm []int16) {
	if k.detector == nil {
		return
	}
	k.evBuf = k.detector.Process(k.evBuf[:0], pcm, time.Now())
	for _, ev := range k.evBuf {
		k.key(ev)
	}
}

// key takes one press from any source.
func (k *keypad) key(ev dtmf.Event) {
	k.mu.Lock()
	if k.closed {
		k.mu.Unlock()
		return
	}
	res := k.collector.Add(ev)
	k.rearm()
	k.mu.Unlock()
	if !res.Accepted {
		return
	}
	k.c.log.Info().Str("dtmf", k.policy.LogDigits(string(rune(res.Key.Digit)))).Str("source", res.Key.Source.String()).Msg("dtmf key")
	k.c.Note(Note{At: res.Key.At, Kind: NoteDTMF, Text: k.policy.LogDigits(string(rune(res.Key.Digit))),
		Data: map[string]string{"source": res.Key.Source.String()}})
	if k.handler != nil {
		k.handler.DTMFKey(res.Key)
	}
	if res.HasFlush {
		k.flush(res.Flush)
	}
	if res.HasAction {
		k.act(res.Action)
	}
}

// speechStarted flushes what is buffered: the caller moved on to talking.
func (k *keypad) speechStarted() {
	k.mu.Lock()
	f, ok := k.collector.SpeechStarted(time.Now())
	k.rearm()
	k.mu.Unlock()
	if ok {
		k.flush(f)
	}
}

// rearm sets the timer to the next flush deadline; k.mu is held.
func (k *keypad) rearm() {
	at, ok := k.collector.Deadline()
	if !ok || k.closed {
		if k.timer != nil {
			k.timer.Stop()
		}
		return
	}
	d := time.Until(at)
	if k.timer == nil {
		k.timer = time.AfterFunc(d, k.tick)
	} else {
		k.timer.Reset(d)
	}
}

func (k *keypad) tick() {
	now := time.Now()
	k.mu.Lock()
	k.receiver.Tick(now)
	f, ok := k.collector.Tick(now)
	k.rearm()
	k.mu.Unlock()
	if ok {
		k.flush(f)
	}
}

func (k *keypad) flush(f dtmf.Flush) {
	text := k.policy.ModelText(f)
	if text == "" {
		return
	}
	if !k.policy.Redacted() {
		k.c.Note(Note{Kind: NoteTranscript, Role: "user", Text: text})
	}
	if k.handler != nil {
		k.handler.DTMFText(text)
	}
}

// act carries out a routed key without the model.
func (k *keypad) act(a dtmf.Action) {
	switch a.Kind {
	case dtmf.ActionHangup:
		k.c.log.Info().Msg("dtmf route: hang up")
		go k.c.hangup("caller chose to hang up (keypad)")
	case dtmf.ActionTransfer:
		k.c.log.Info().Str("target_uri", a.Target).Msg("dtmf route: transfer")
		k.c.Note(Note{Kind: NoteTransfer, Text: a.Target, Data: map[string]string{"reason": "dtmf route"}})
		go func() {
			ctx, cancel := context.WithTimeout(k.c.in.Context(), 90*time.Second)
			defer cancel()
			if err := k.c.in.Transfer(ctx, a.Target, ""); err != nil {
				k.c.log.Warn().Err(err).Msg("dtmf route transfer failed")
				k.c.Note(Note{Kind: NoteTransfer, Text: "failed: " + err.Error()})
				return
			}
			k.c.hangup("transferred (keypad)")
		}()
	}
}

func (k *keypad) close() {
	k.mu.Lock()
	k.closed = true
	if k.timer != nil {
		k.timer.Stop()
	}
	k.mu.Unlock()
}

// SetDTMFInband sets the number's in-band DTMF detection for this call
// ("" follows the conversation's setting); the router calls it before the
// conversation starts.
func (c *Call) SetDTMFInband(v Inband) {
	c.mu.Lock()
	c.inband = v
	c.mu.Unlock()
}

// errNoDigits is returned for an empty or invalid digit string.
var errNoDigits = errors.New("dtmf: digits must be 1-64 of 0-9, *, #, A-D")

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
			return nil, errNoDigits
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
func (c *Call) SendDTMF(ctx context.Context, digits string) error {
	if len(digits) == 0 || len(digits) > 64 {
		return errNoDigits
	}
	for i := 0; i < len(digits); i++ {
		if !dtmf.ValidDigit(digits[i]) {
			return errNoDigits
		}
	}
	c.mu.Lock()
	sess, sender, state := c.sess, c.sender, c.state
	c.mu.Unlock()
	if state != StateActive || sess == nil {
		return fmt.Errorf("send dtmf: %w", ErrNotActive)
	}
	ptime := c.in.Media().Ptime
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
	c.Note(Note{Kind: NoteDTMF, Text: "sent " + digits})
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
			return nil, errNoDigits
		}
		buf := make([]int16, per)
		gen.Generate(buf)
		gen.Stop()
		out = append(out, buf...)
		out = append(out, make([]int16, gap)...)
	}
	return out, nil
}

// ErrNotActive means the call is not answered, or already over.
var ErrNotActive = errors.New("call is not active")
