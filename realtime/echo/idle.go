package echo

import (
	"time"

	"switchboard/realtime"
)

// The idle timer of turn_detection.idle_timeout_ms (server VAD only): once
// the assistant has finished speaking, a caller who stays silent that long
// gets a check-in. The timer fires input_audio_buffer.timeout_triggered,
// the silent audio since is committed as a user turn, and a response
// checks in (the echo engine says idleCheckIn).

// idleCheckIn is what the echo engine says when the idle timer fires.
const idleCheckIn = "Are you still there?"

// armIdle starts the idle timer after response r completed: its
// deadline counts from the end of r's audio (sent ahead of real time by
// Options.Lead), not from the last chunk's sending.
func (s *session) armIdle(r *response) {
	td := s.cfg.TurnDetection()
	if !s.vadOn || td == nil || td.IdleTimeoutMs == nil || *td.IdleTimeoutMs <= 0 {
		return
	}
	end := time.Now()
	if !r.text {
		if spoken := r.started.Add(time.Duration(r.audioFm.ms(len(r.audio))) * time.Millisecond); spoken.After(end) {
			end = spoken
		}
	}
	s.idleFrom = s.pos
	s.idle.Reset(time.Until(end.Add(time.Duration(*td.IdleTimeoutMs) * time.Millisecond)))
	s.idleOn = true
}

// disarmIdle stops the idle timer: the caller spoke, or the client
// moved the conversation on.
func (s *session) disarmIdle() {
	if s.idleOn {
		s.idle.Stop()
		s.idleOn = false
	}
}

// idleFired is the timer's end: the silent turn goes in, and the model
// (here: the echo engine) checks in.
func (s *session) idleFired() {
	if !s.idleOn {
		return
	}
	s.idleOn = false
	if s.resp != nil || s.turnID != "" {
		return // a response or a turn started meanwhile
	}
	from := max(s.idleFrom, s.bufStart)
	itemID := s.id("item")
	s.emit(&realtime.InputAudioBufferTimeoutTriggered{AudioStartMs: s.ms(from), AudioEndMs: s.ms(s.pos), ItemID: itemID})
	s.onset = s.pos
	s.commit(itemID, from, s.pos, s.pos)
	s.startResponse(&realtime.ResponseParams{Instructions: idleCheckIn}, nil)
}
