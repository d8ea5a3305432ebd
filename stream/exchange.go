package stream

import (
	"errors"
	"fmt"
	"strconv"
	"time"

	"switchboard/call"
)

// The exchange with the bot: one writer goroutine sends the queued
// messages in order, one reader goroutine handles the bot's; the media
// goroutine (Audio) queues the caller's frames and ticks the playback
// mirror.

// writeFailGrace is how long a failed write waits for the reader to say
// why the bot's side ended (its close frame) before the write's error
// stands as the cause.
const writeFailGrace = 200 * time.Millisecond

// writer writes the queued messages to the bot, in order, until stop or
// the end of the exchange.
func (s *Stream) writer() {
	defer s.wg.Done()
	defer s.contain("writer")
	// m is reused: a message received into a new variable each time would
	// escape to the heap through the wire's write, once per frame.
	var m outMsg
	for {
		select {
		case m = <-s.out:
			err := s.w.write(&m)
			putFrame(m.buf)
			if m.kind == outStop {
				s.end(nil)
				s.closeWire("call ended")
				return
			}
			if err != nil {
				// A bot that closed its socket fails our next write; its
				// close frame, already read or on its way, says why: the
				// reader's verdict comes first if it comes at once.
				select {
				case <-s.done:
				case <-time.After(writeFailGrace):
				}
				s.end(fmt.Errorf("write to the bot: %s", scrub(err)))
				s.closeWire("write failed")
				return
			}
		case <-s.done:
			s.closeWire("stream ended")
			return
		}
	}
}

// reader reads the bot's messages until its side ends.
func (s *Stream) reader() {
	defer s.wg.Done()
	defer s.contain("reader")
	for {
		m, err := s.w.read()
		if err != nil {
			var r *refusal
			if errors.As(err, &r) {
				s.refuse(r)
				continue
			}
			if !s.closing.Load() {
				s.end(readCause(err))
			}
			s.closeWire("")
			return
		}
		switch m.kind {
		case inMedia:
			s.play(m.payload)
		case inMark:
			s.mark(m.name)
		case inClear:
			s.clear()
		case inHangup:
			s.end(&closedError{what: "the bot hung up"})
			s.closeWire("")
			return
		}
	}
}

// end records why the exchange with the bot is over (nil: the call ended
// it) and stops the media to it.
func (s *Stream) end(cause error) {
	s.endOnce.Do(func() {
		s.cause = cause
		s.live.Store(false)
		close(s.done)
	})
}

func (s *Stream) closeWire(reason string) {
	s.wireOnce.Do(func() { _ = s.w.close(reason) })
}

// media queues a media message of track (never blocking).
func (s *Stream) media(track string, at int64, payload []byte) {
	select {
	case s.out <- outMsg{kind: outMedia, track: track, at: at, buf: getFrame(payload)}:
		s.sent.Add(1)
	default:
		s.dropped.Add(1)
		s.sv.opts.Metrics.frameDropped()
	}
}

// control queues a message that must not be lost (dtmf, mark): a bot that
// left it no room has stopped reading, and the stream ends.
func (s *Stream) control(m outMsg) {
	select {
	case s.out <- m:
	default:
		s.end(errors.New("the bot stopped reading its stream"))
	}
}

// tick brings the playback mirror up to date with what the Speaker still
// has queued: marks whose audio was sent are answered, and with the both
// track the audio the caller heard goes to the bot.
func (s *Stream) tick(at int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.advance(at)
}

// frameTick is tick on the media goroutine (Audio), which serves every
// call of its scheduler worker: it never waits for the stream's mutex.
// With nothing queued and no mark waiting it has nothing to do; while the
// reader holds the mutex (it plays the bot's audio, and its thread may be
// descheduled right then on a busy machine) this frame's tick is skipped:
// the next frame's, 20 ms later, or Run's for a waiting mark, catches up.
// A worker blocked there stalled the hundreds of calls it ticks.
func (s *Stream) frameTick(at int64) {
	if !s.pending.Load() || !s.mu.TryLock() {
		return
	}
	defer s.mu.Unlock()
	s.advance(at)
}

// advance is tick's work (s.mu held).
func (s *Stream) advance(at int64) {
	defer s.settle()
	if s.pb.quiet() {
		return
	}
	s.played, s.names = s.pb.advance(s.phone.Pending(), s.played[:0], s.names[:0])
	if len(s.played) > 0 {
		s.media(trackOutbound, at, s.played)
	}
	s.sendMarks()
}

// settle publishes whether the playback mirror has work for frameTick
// (s.mu held, after each change of it).
func (s *Stream) settle() { s.pending.Store(!s.pb.quiet()) }

// sendMarks answers the marks in s.names (s.mu held, so marks leave in
// order).
func (s *Stream) sendMarks() {
	for _, n := range s.names {
		s.control(outMsg{kind: outMark, name: n})
	}
	s.names = s.names[:0]
}

// play queues the bot's audio for the caller (the leg's pacer sends it),
// dropping the oldest beyond MaxQueue.
func (s *Stream) play(b []byte) {
	out := s.conv.toCall(b)
	s.mu.Lock()
	defer s.mu.Unlock()
	defer s.settle()
	s.phone.Play(s.item, out)
	s.pb.queued(b)
	if d := s.trim.Trim(s.opts.MaxQueue); d > 0 {
		s.pb.dropped(d)
		if s.lost == 0 {
			s.log.Warn().Dur("max_queue", s.opts.MaxQueue).Msg("the bot sends audio faster than real time: its oldest audio is dropped")
			s.phone.Note(call.Note{Kind: call.NoteEvent, Text: "stream: the bot sends audio faster than real time; its oldest audio beyond " +
				s.opts.MaxQueue.String() + " is dropped"})
		}
		s.lost += d
		s.sv.opts.Metrics.audioDropped(d)
	}
}

// mark places the bot's mark after the audio queued so far.
func (s *Stream) mark(name string) {
	s.mu.Lock()
	s.names = s.pb.passed(s.names[:0])
	s.marks++
	ready, ok := s.pb.mark(name, s.opts.MaxMarks)
	if ready {
		s.names = append(s.names, name)
	}
	s.sendMarks()
	s.settle()
	s.mu.Unlock()
	if !ok {
		s.refuse(refuse(refusedTooManyMarks, "more than %d marks wait for their audio", s.opts.MaxMarks))
		return
	}
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// clear drops the bot's queued audio at once (barge-in) and answers every
// waiting mark.
func (s *Stream) clear() {
	s.mu.Lock()
	defer s.mu.Unlock()
	defer s.settle()
	s.phone.Flush()
	s.names = s.pb.cleared(s.names[:0])
	s.clears++
	s.item = "stream-" + strconv.Itoa(s.clears)
	s.conv.reset()
	s.sendMarks()
}

// refuse counts a refused message; the first of each reason is noted in
// the call record and logged.
func (s *Stream) refuse(r *refusal) {
	s.mu.Lock()
	s.refused[r.reason]++
	first := s.refused[r.reason] == 1
	s.mu.Unlock()
	s.sv.opts.Metrics.countRefused(r.reason)
	if first {
		s.log.Warn().Str("reason", r.reason).Str("detail", r.detail).Msg("stream message refused (the first of its kind; the others are counted)")
		s.phone.Note(call.Note{Kind: call.NoteEvent, Text: "stream: " + r.Error()})
	}
}
