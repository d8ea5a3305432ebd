package media

import (
	"fmt"
	"strings"
	"sync/atomic"
)

// Listener takes a session's inbound audio in one Format: the session
// decodes each frame once (when some listener needs PCM) and every
// listener converts it on from there, so a consumer sees the rate and
// encoding it asked for whatever the leg speaks:
//
//	PCMU -> PCMU                                     (relay: the code words as they came)
//	PCMU -> PCMA                                     (code word to code word)
//	PCMU(decode) -> Resample(8k->24k) -> PCM16LE(24k) (a 24 kHz model)
//	Opus(decode 24k) -> Resample(24k->8k) -> PCMU      (a G.711 consumer of a wideband leg)
//
// The sink runs on the session's media goroutine once per frame: it must
// not block or keep the slice.
type Listener struct {
	s      *Session
	format Format
	sink   func(b []byte)
	pcmOut func(pcm []int16) // ListenPCM: samples at format.Rate
	law    Codec             // the G.711 law wanted (format G.711)
	law711 bool
	src    source
	rs     *Resampler // the session's PCM rate to format.Rate; nil: same rate
	pcm    []int16
	out    []byte
	chain  string
	off    atomic.Bool
}

// source is what a session's inbound frames are before any listener
// converts them: code words of a G.711 or G.722 codec, PCM at the
// decoder's rate.
type source struct {
	codec Codec
	rate  int // PCM rate after the decoder
	dec   string
}

// relays reports whether f takes src's code words without decoding them.
func (src source) relays(f Format) bool {
	c, ok := f.G711()
	return ok && src.codec.IsG711() && c.IsG711()
}

func newListener(s *Session, src source, f Format, sink func([]byte), pcmOut func([]int16)) (*Listener, error) {
	if err := f.Check(); err != nil {
		return nil, fmt.Errorf("listen: %w", err)
	}
	l := &Listener{s: s, format: f, sink: sink, pcmOut: pcmOut, src: src}
	l.law, l.law711 = f.G711()
	stages := []string{src.codec.Name}
	if src.relays(f) && pcmOut == nil {
		if !l.law.sameLaw(src.codec) {
			stages = append(stages, l.law.Name)
		}
		l.chain = strings.Join(stages, " -> ")
		return l, nil
	}
	stages[0] = src.dec
	rate := f.Rate
	if l.law711 {
		rate = ClockRate
	}
	if rate != src.rate {
		var err error
		if l.rs, err = NewResampler(src.rate, rate); err != nil {
			return nil, fmt.Errorf("listen: %w", err)
		}
		stages = append(stages, l.rs.String())
	}
	switch {
	case pcmOut != nil:
		stages = append(stages, "PCM("+khz(rate)+")")
	case l.law711:
		stages = append(stages, l.law.Name+"(encode)")
	default:
		stages = append(stages, f.String())
	}
	l.chain = strings.Join(stages, " -> ")
	return l, nil
}

// Format is the audio the listener takes.
func (l *Listener) Format() Format { return l.format }

// needsPCM reports whether the listener reads decoded frames.
func (l *Listener) needsPCM() bool { return !(l.pcmOut == nil && l.src.relays(l.format)) }

// String shows the listener's chain, e.g.
// "PCMU(decode) -> Resample(8k->24k) -> PCM16LE(24k)". A deferred
// session's listener of G.711 relays the wire's code words once it
// settled on G.711 ("PCMU", "PCMU -> PCMA").
func (l *Listener) String() string {
	if l.s != nil && l.s.opts.Deferred && l.pcmOut == nil && l.law711 {
		if w := l.s.wireCodec(); w.IsG711() {
			if l.law.sameLaw(w) {
				return w.Name
			}
			return w.Name + " -> " + l.law.Name
		}
	}
	return l.chain
}

// Stop takes the listener off its session: its sink is not called after
// the frame in progress (if any). It is idempotent.
func (l *Listener) Stop() {
	if l.off.Swap(true) {
		return
	}
	l.s.removeListener(l)
}

// push hands one frame to the sink (media goroutine): coded holds the
// frame's code words of wire (G.711 or G.722), pcm its decoding (nil
// when no listener needs it). A listener of G.711 takes G.711 code words
// as they are, or transcoded to its law: a G.711 session's, and a
// deferred session's once its wire settled on G.711.
func (l *Listener) push(coded []byte, wire Codec, pcm []int16) {
	if l.pcmOut == nil && l.law711 && wire.IsG711() {
		if l.law.sameLaw(wire) {
			l.sink(coded)
			return
		}
		l.out = l.law.Transcode(l.out[:0], wire, coded)
		l.sink(l.out)
		return
	}
	if l.rs != nil {
		l.pcm = l.rs.Process(l.pcm[:0], pcm)
		pcm = l.pcm
	}
	switch {
	case l.pcmOut != nil:
		l.pcmOut(pcm)
	case l.law711:
		l.out = l.law.EncodeFrame(l.out[:0], pcm)
		l.sink(l.out)
	default:
		l.out = AppendPCM16LE(l.out[:0], pcm)
		l.sink(l.out)
	}
}

// listenerSet is the session's listeners as one frame sees them (copy on
// write: adding or stopping one never stalls the media goroutine).
type listenerSet struct {
	ls      []*Listener
	needPCM bool
}

// Listen adds a consumer of the inbound audio in format f (PCM16 at a
// resampler rate, or G.711): sink gets every frame from the next one on.
func (s *Session) Listen(f Format, sink func(b []byte)) (*Listener, error) {
	l, err := newListener(s, s.source(), f, sink, nil)
	if err != nil {
		return nil, err
	}
	s.addListener(l)
	return l, nil
}

// ListenPCM adds a consumer of the inbound audio as samples at rate (a
// detector: in-band DTMF, answering-machine detection).
func (s *Session) ListenPCM(rate int, sink func(pcm []int16)) (*Listener, error) {
	l, err := newListener(s, s.source(), PCM16(rate), nil, sink)
	if err != nil {
		return nil, err
	}
	s.addListener(l)
	return l, nil
}

// source describes the session's inbound frames for a listener.
func (s *Session) source() source {
	if s.opts.Deferred {
		// PCM whatever the wire carries: no listener takes its code
		// words, which SettleCodec may change.
		return source{codec: Codec{Name: "PCM"}, rate: s.dec.Rate(), dec: s.dec.String()}
	}
	if s.dec == nil {
		return source{codec: s.opts.Codec, rate: ClockRate, dec: s.opts.Codec.Name + "(decode)"}
	}
	return source{codec: s.opts.Codec, rate: s.dec.Rate(), dec: s.dec.String()}
}

func (s *Session) addListener(l *Listener) {
	s.lmu.Lock()
	defer s.lmu.Unlock()
	cur := s.listeners.Load()
	next := &listenerSet{}
	if cur != nil {
		next.ls = append(next.ls, cur.ls...)
	}
	next.ls = append(next.ls, l)
	next.needPCM = anyNeedsPCM(next.ls)
	s.listeners.Store(next)
}

func (s *Session) removeListener(l *Listener) {
	s.lmu.Lock()
	defer s.lmu.Unlock()
	cur := s.listeners.Load()
	if cur == nil {
		return
	}
	next := &listenerSet{}
	for _, o := range cur.ls {
		if o != l {
			next.ls = append(next.ls, o)
		}
	}
	next.needPCM = anyNeedsPCM(next.ls)
	s.listeners.Store(next)
}

func anyNeedsPCM(ls []*Listener) bool {
	for _, l := range ls {
		if l.needsPCM() {
			return true
		}
	}
	return false
}

// listenersString lists the listeners' chains for Session.String.
func (s *Session) listenersString() string {
	set := s.listeners.Load()
	if set == nil || len(set.ls) == 0 {
		return ""
	}
	parts := make([]string, len(set.ls))
	for i, l := range set.ls {
		parts[i] = l.String()
	}
	return " => [" + strings.Join(parts, "; ") + "]"
}

// Format is the session's own audio: its G.711 code words for a G.711
// session (what relays untouched to a consumer of the same law), PCM16 at
// the decoder's rate for G.722 and Opus; a deferred session's is PCM16 at
// its rate until its answer settles G.711, then that law's code words.
func (s *Session) Format() Format {
	if s.opts.Deferred {
		// PCM at its rate until the answer settles G.711 (settle.go).
		switch fm := s.playout.form(); {
		case fm.coded && fm.codec.ulaw:
			return FormatPCMU
		case fm.coded:
			return FormatPCMA
		}
		return PCM16(s.opts.Rate)
	}
	switch {
	case s.dec != nil:
		return PCM16(s.dec.Rate())
	case s.opts.Codec.ulaw:
		return FormatPCMU
	}
	return FormatPCMA
}
