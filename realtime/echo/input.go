package echo

import (
	"time"

	"switchboard/realtime"
)

// The input audio of a session: the buffer of the turn in progress, kept
// in the store format, and the VAD that reads it.

// ms converts input samples to milliseconds.
func (s *session) ms(samples int64) int { return int(samples * 1000 / int64(s.in.rate)) }

// step is how many input samples one kept sample stands for.
func (s *session) step() int64 { return int64(s.in.rate / s.st.rate) }

// off is the offset in buf of input position p (bufStart or later).
func (s *session) off(p int64) int {
	o := int((p-s.bufStart)/s.step()) * s.st.bytesPerSample()
	return min(max(o, 0), len(s.buf))
}

// advance drops the buffer's first n input samples (whole kept samples);
// copyDown moves the rest to the array's start, so it does not grow.
func (s *session) advance(n int64, copyDown bool) {
	n -= n % s.step()
	o := s.off(s.bufStart + n)
	if copyDown {
		s.buf = s.buf[:copy(s.buf, s.buf[o:])]
	} else {
		s.buf = s.buf[o:]
	}
	s.bufStart += int64(o/s.st.bytesPerSample()) * s.step()
}

// onAudio takes input audio. The VAD reads it as it came, and every
// position counts input samples; the buffer keeps it in the store format
// (s.st: 8 kHz µ-law for PCM input).
func (s *session) onAudio(b []byte) {
	bps := s.in.bytesPerSample()
	if len(s.carry) > 0 {
		b = append(s.carry, b...)
		s.carry = nil
	}
	if r := len(b) % bps; r != 0 {
		s.carry = append([]byte(nil), b[len(b)-r:]...)
		b = b[:len(b)-r]
	}
	// Room for the frame, the array growing to MaxTurn and no further
	// (capTurn keeps the buffer within it).
	s.buf = s.reserve(s.buf, (len(b)/bps)/int(s.step())*s.st.bytesPerSample()+s.st.bytesPerSample())
	decoded := false
	if s.in == s.st {
		s.buf = append(s.buf, b...)
	} else {
		s.scratch, decoded = s.in.decode(s.scratch[:0], b), true
		s.buf = s.inConv.appendPCM(s.buf, s.scratch)
	}
	s.pos += int64(len(b) / bps)
	s.capTurn()
	if !s.vadOn {
		return
	}
	if !decoded {
		s.scratch = s.in.decode(s.scratch[:0], b)
	}
	s.vadEvs = s.vad.push(s.vadEvs[:0], s.scratch)
	for _, ev := range s.vadEvs {
		switch ev.kind {
		case vadStart:
			s.disarmIdle()
			s.turnID = s.id("item")
			s.onset, s.turnStart = ev.onset, ev.at
			s.emit(&realtime.InputAudioBufferSpeechStarted{AudioStartMs: s.ms(ev.at), ItemID: s.turnID})
			if s.resp != nil && boolOr(s.cfg.TurnDetection().InterruptResponse, true) {
				s.finish(realtime.StatusCancelled, realtime.ReasonTurnDetected)
			}
		case vadStop:
			s.emit(&realtime.InputAudioBufferSpeechStopped{AudioEndMs: s.ms(ev.at), ItemID: s.turnID})
			s.commit(s.turnID, s.turnStart, ev.at, ev.speechEnd)
			s.turnID = ""
			if boolOr(s.cfg.TurnDetection().CreateResponse, true) {
				s.startResponse(nil, s.items[len(s.items)-1])
			}
		}
	}
	if !s.vad.inSpeech && s.turnID == "" {
		// Keep only what a future turn's prefix padding may need.
		keep := s.vad.msToSamples(s.vad.cfg.prefixMs + s.vad.cfg.minSpeechMs + 30)
		if drop := s.pos - keep - s.bufStart; drop > 0 {
			s.advance(drop, false)
		}
	}
}

// reserve returns buf with room for n more bytes: doubled as an append
// would, but never past the size of MaxTurn (and n) in the store format.
func (s *session) reserve(buf []byte, n int) []byte {
	if cap(buf)-len(buf) >= n {
		return buf
	}
	limit := int(s.turnLimit()+s.turnSlack())/int(s.step())*s.st.bytesPerSample() + n
	nb := make([]byte, len(buf), max(min(2*cap(buf), limit), len(buf)+n, 4096))
	copy(nb, buf)
	return nb
}

// capTurn keeps at most MaxTurn of the input buffer (the turn in
// progress, or what its prefix padding may need): a longer turn loses its
// oldest audio, and the committed item holds its last MaxTurn (commit
// trims it). The buffer runs turnSlack past MaxTurn before its oldest
// audio goes, so the copy down happens once per turnSlack of speech, not
// on every frame of a long turn: with a copy per frame, 500 callers
// talking without a pause moved 2 GB/s and made the calls' frames late.
func (s *session) capTurn() {
	limit := s.turnLimit()
	if s.pos-s.bufStart > limit+s.turnSlack() {
		s.advance(s.pos-s.bufStart-limit, true)
	}
}

// turnLimit is MaxTurn in input samples.
func (s *session) turnLimit() int64 {
	return int64(s.e.opts.MaxTurn) * int64(s.in.rate) / int64(time.Second)
}

// turnSlack is how far past MaxTurn the buffer may run (an eighth of it).
func (s *session) turnSlack() int64 { return s.turnLimit() / 8 }
