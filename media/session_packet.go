package media

import "time"

// maxPacketsPerTick bounds the packets one frame tick delivers (ptime
// over the shortest Opus packet, 2.5 ms, is 24).
const maxPacketsPerTick = 32

// deliverPackets is deliver for an Opus session: the frame tick owes the
// consumer a ptime of audio; packets are popped, decoded (a lost one
// concealed) and handed over until their lengths cover it.
func (s *Session) deliverPackets(in *inFrame, due time.Time) {
	dec := s.dec
	rate := dec.Rate()
	set := s.listeners.Load()
	in.credit += s.pktJB.Frame()
	for i := 0; in.credit > 0 && i < maxPacketsPerTick; i++ {
		s.mu.Lock()
		payload, fec, dur, st := s.pktJB.Pop(in.coded[:0])
		clock := s.pktJB.clock
		s.mu.Unlock()
		in.coded = payload
		in.credit -= dur
		s.stats.CountFrame(st)
		if st == FrameIdle {
			in.credit = 0
			return
		}
		// Concealment goes by 2.5 ms steps (what libopus conceals).
		n := (dur - dur%(clock/400)) * rate / clock
		if n == 0 {
			continue
		}
		var err error
		switch {
		case st == FramePlayed:
			in.pcm, err = dec.Decode(in.pcm[:0], payload)
		case st == FrameConcealed && fec:
			in.pcm, err = dec.Conceal(in.pcm[:0], payload, n)
		case st == FrameConcealed:
			in.pcm, err = dec.Conceal(in.pcm[:0], nil, n)
		default:
			in.pcm = grow(in.pcm[:0], n)
			clear(in.pcm)
		}
		if err != nil {
			// A packet libopus refuses plays as a lost one.
			st = FrameConcealed
			if in.pcm, err = dec.Conceal(in.pcm[:0], nil, n); err != nil {
				in.pcm = grow(in.pcm[:0], n)
				clear(in.pcm)
				st = FrameSilence
			}
		}
		if s.tap != nil {
			s.tap.Inbound(Frame{At: due, Samples: len(in.pcm), PCM: in.pcm, Status: st})
		}
		s.feed(set, nil, Codec{}, in.pcm)
	}
	if s.opts.OnFrame != nil {
		s.opts.OnFrame(due)
	}
}
