package media

import (
	"errors"
	"fmt"
	"sync"
)

// A deferred session (SessionOptions.Deferred) starts before its codec is
// known: a call the appliance places, or one whose INVITE carried no
// offer, learns the codec from the peer's answer, which chooses among
// several of different audio rates (Opus, G.722, G.711) while the call's
// listeners and writers already exist. Until the answer such a session
// runs as a wideband one whatever travels on the wire: its own audio is
// PCM at Rate, its wire codec is decoded to Rate and encoded from it
// (resampled when the codec's own rate differs). An answer in G.722 or
// Opus keeps it so (SettleCodec swaps the coders alone); one in PCMU or
// PCMA makes it a G.711 session like any other (settleForm): its playout
// holds code words, the pacer sends them as they are, and a listener or
// writer in G.711 relays them, while those made before the answer go on
// (PCM listeners are fed decoded frames at Rate as before, writers follow
// the playout's new form).

var errNotDeferred = errors.New("the session's codec is fixed (not deferred)")

// wireDecoder is a deferred session's decoder: the wire codec's decoder
// behind a resampler to the session's rate, swapped by SettleCodec. The
// media goroutine decodes; the lock only orders the swap.
type wireDecoder struct {
	rate int
	mu   sync.Mutex
	dec  Decoder
	rs   *Resampler // the codec's rate to rate; nil: the same
	buf  []int16
}

func (d *wireDecoder) Decode(dst []int16, payload []byte) ([]int16, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.rs == nil {
		return d.dec.Decode(dst, payload)
	}
	var err error
	d.buf, err = d.dec.Decode(d.buf[:0], payload)
	return d.rs.Process(dst, d.buf), err
}

// Conceal asks the codec for samples at its own rate (samples are at the
// session's).
func (d *wireDecoder) Conceal(dst []int16, next []byte, samples int) ([]int16, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.rs == nil {
		return d.dec.Conceal(dst, next, samples)
	}
	var err error
	d.buf, err = d.dec.Conceal(d.buf[:0], next, samples*d.dec.Rate()/d.rate)
	return d.rs.Process(dst, d.buf), err
}

func (d *wireDecoder) Rate() int { return d.rate }

func (d *wireDecoder) String() string {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.rs == nil {
		return d.dec.String()
	}
	return d.dec.String() + " -> " + d.rs.String()
}

func (d *wireDecoder) Close() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.dec.Close()
}

// set puts dec in place (the old decoder is closed).
func (d *wireDecoder) set(dec Decoder) error {
	var rs *Resampler
	if dec.Rate() != d.rate {
		var err error
		if rs, err = NewResampler(dec.Rate(), d.rate); err != nil {
			return err
		}
	}
	d.mu.Lock()
	old := d.dec
	d.dec, d.rs = dec, rs
	d.mu.Unlock()
	if old != nil {
		_ = old.Close()
	}
	return nil
}

// wireEncoder is a deferred session's encoder: PCM at the session's rate
// resampled to the wire codec's, then encoded; swapped by SettleCodec.
type wireEncoder struct {
	rate int
	mu   sync.Mutex
	enc  Encoder
	rs   *Resampler // rate to the codec's rate; nil: the same
	buf  []int16
}

func (e *wireEncoder) Encode(dst []byte, pcm []int16) ([]byte, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.rs != nil {
		e.buf = e.rs.Process(e.buf[:0], pcm)
		pcm = e.buf
	}
	return e.enc.Encode(dst, pcm)
}

func (e *wireEncoder) Rate() int { return e.rate }

func (e *wireEncoder) String() string {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.rs == nil {
		return e.enc.String()
	}
	return e.rs.String() + " -> " + e.enc.String()
}

func (e *wireEncoder) Close() error {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.enc.Close()
}

func (e *wireEncoder) set(enc Encoder) error {
	var rs *Resampler
	if enc.Rate() != e.rate {
		var err error
		if rs, err = NewResampler(e.rate, enc.Rate()); err != nil {
			return err
		}
	}
	e.mu.Lock()
	old := e.enc
	e.enc, e.rs = enc, rs
	e.mu.Unlock()
	if old != nil {
		_ = old.Close()
	}
	return nil
}

// wireCoders are c's decoder and encoder for a deferred session at rate:
// Opus codes at rate itself when it is one of its rates.
func wireCoders(c Codec, rate int, o EncoderOptions) (Decoder, Encoder, error) {
	dec, err := c.NewDecoder(rate)
	if err != nil {
		return nil, nil, err
	}
	enc, err := c.NewEncoder(rate, o)
	if err != nil {
		_ = dec.Close()
		return nil, nil, err
	}
	return dec, enc, nil
}

// initDeferred is initCodec for a deferred session: PCM at Rate, the
// first codec (the one we offer first) on the wire until SettleCodec.
func (s *Session) initDeferred() error {
	o := s.opts
	d, e := &wireDecoder{rate: o.Rate}, &wireEncoder{rate: o.Rate}
	dec, enc, err := wireCoders(o.Codec, o.Rate, o.Encoder)
	if err != nil {
		return err
	}
	if err := d.set(dec); err != nil {
		_, _ = dec.Close(), enc.Close()
		return err
	}
	if err := e.set(enc); err != nil {
		_, _ = dec.Close(), enc.Close()
		return err
	}
	s.dec, s.enc = d, e
	if err := s.newJitter(o.Codec); err != nil {
		s.closeCoders()
		return err
	}
	s.playout = NewPlayoutAt(o.Rate)
	s.tap = o.Tap
	if o.Tap != nil {
		if s.tap, err = NewRateTap(o.Tap, o.Rate, o.Rate); err != nil {
			s.closeCoders()
			return err
		}
	}
	return nil
}

// newJitter makes the jitter buffer of codec c (s.mu held, or before the
// session runs): Opus keeps packets, the others code words.
func (s *Session) newJitter(c Codec) error {
	jopts := JitterOptions{Ptime: s.opts.Ptime, Delay: s.opts.JitterDelay}
	if jb := s.jitterOrNil(); jb != nil {
		jopts.Ptime = jb.Ptime()
	}
	if c.opus {
		jb, err := NewPacketJitterBuffer(c, jopts)
		if err != nil {
			return err
		}
		s.pktJB, s.codedJB = jb, nil
		return nil
	}
	jb, err := NewCodedJitterBuffer(c, jopts)
	if err != nil {
		return err
	}
	s.codedJB, s.pktJB = jb, nil
	return nil
}

// jitterOrNil is the buffer in use, nil before there is one.
func (s *Session) jitterOrNil() jitter {
	switch {
	case s.pktJB != nil:
		return s.pktJB
	case s.codedJB != nil:
		return s.codedJB
	}
	return nil
}

// SettleCodec puts the codec the peer's answer chose on the wire of a
// deferred session (SessionOptions.Deferred), with the encoder settings
// its answer asks for: from the next frame on, packets go out and are
// taken in c. The session's own audio stays PCM at its rate for G.722 and
// Opus, and becomes c's code words for G.711 (settleForm); listeners,
// writers and taps made before go on either way. Packets of the old
// codec still buffered are dropped. It is meant for the answer, before
// the call's audio flows, but is safe while it flows (audio queued for
// the peer is converted, not dropped); the same codec again changes
// nothing.
func (s *Session) SettleCodec(c Codec, o EncoderOptions) error {
	if !s.opts.Deferred {
		return fmt.Errorf("settle codec: %w", errNotDeferred)
	}
	if c.Name == "" {
		return fmt.Errorf("settle codec: %w", errUnknownCodec)
	}
	s.settled.Store(true)
	s.mu.Lock()
	same := s.opts.Codec == c && s.opts.Encoder == o
	s.mu.Unlock()
	if same {
		s.tickMu.Lock()
		s.settleForm(c) // the codec offered first is the one answered
		s.tickMu.Unlock()
		return nil
	}
	dec, enc, err := wireCoders(c, s.opts.Rate, o)
	if err != nil {
		return fmt.Errorf("settle codec: %w", err)
	}
	// No tick runs while the codec changes: the media goroutine reads
	// the jitter buffer and the coders without the session's lock.
	s.tickMu.Lock()
	defer s.tickMu.Unlock()
	if err := s.dec.(*wireDecoder).set(dec); err != nil {
		_, _ = dec.Close(), enc.Close()
		return fmt.Errorf("settle codec: %w", err)
	}
	if err := s.enc.(*wireEncoder).set(enc); err != nil {
		_ = enc.Close()
		return fmt.Errorf("settle codec: %w", err)
	}
	s.mu.Lock()
	err = s.newJitter(c)
	if err == nil {
		s.opts.Codec, s.opts.Encoder, s.codecPT = c, o, c.PayloadType
		s.rx.clock = c.ClockRate
	}
	s.mu.Unlock()
	if err != nil {
		return fmt.Errorf("settle codec: %w", err)
	}
	s.stats.clock.Store(int32(c.ClockRate))
	s.in.credit = 0
	s.settleForm(c)
	s.pacer.SetCodec(c)
	return nil
}

// settleForm makes the session's own audio G.711 code words once the
// wire is PCMU or PCMA, and PCM at its rate otherwise (tickMu held): its
// playout changes form (the queued audio converted), the pacer sends the
// code words as they are, and listeners asking for G.711 take the wire's
// code words (Listener.push), so a bridge to another G.711 leg relays
// them both ways instead of decoding, resampling and encoding again.
func (s *Session) settleForm(c Codec) {
	if c.IsG711() {
		s.playout.recodeTo(c, ClockRate)
		s.pacer.setEncoder(nil)
		return
	}
	s.playout.recodeTo(Codec{}, s.opts.Rate)
	s.pacer.setEncoder(s.enc)
}

// wireCodec is the codec on the wire.
func (s *Session) wireCodec() Codec {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.opts.Codec
}
