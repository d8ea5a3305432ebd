package media

import (
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/pion/rtcp"
)

// tick runs everything of the session that is due within lead from now
// (on a scheduler worker, which runs sessions due within SchedulerSlack
// together) and returns when it is next due. The outbound pacer and the
// inbound frame clock keep their own drift-free schedules; the packets
// queued on the sockets are read first, so a frame is only late when its
// packet really came after its playout time.
func (s *Session) tick(lead time.Duration) time.Time {
	real := s.now()
	s.drainRTP(real)
	if !real.Before(s.nextRTCPRead) {
		s.drainRTCP(real)
		s.nextRTCPRead = real.Add(rtcpPoll)
	}
	now := real.Add(lead)
	s.tickNow = real
	if s.ptimeChanged.Swap(false) {
		s.inStart, s.inN = now, 0
		s.mu.Lock()
		s.inPtime = s.jitter().Ptime()
		s.mu.Unlock()
	}
	next, _ := s.pacer.Tick(now) // write errors: nothing to do but keep time
	ptime := s.inPtime
	for {
		due := s.inStart.Add(time.Duration(s.inN) * ptime)
		if due.After(now) {
			next = minTime(next, due)
			break
		}
		if now.Sub(due) > 5*ptime { // stalled: skip, like the pacer
			s.inN += int64(now.Sub(due) / ptime)
			continue
		}
		s.inN++
		s.deliver(&s.in, due)
	}
	s.checkTimeout(now)
	if !now.Before(s.nextReport) {
		s.sendReport(now)
		s.nextReport = now.Add(s.reportInterval())
	}
	return minTime(minTime(next, s.nextReport), s.nextRTCPRead)
}

// inFrame holds the inbound frame between deliveries (media goroutine).
type inFrame struct {
	pcm   []int16
	coded []byte
	// credit is the RTP ticks an Opus session owes its consumer: each
	// frame tick adds a ptime, each packet delivered takes its length.
	credit int
}

// deliver pops the frame that is due and hands it on: to the tap (8 kHz:
// G.711 code words, or a wideband frame's PCM through the RateTap), to
// each listener (decoded once, when one needs PCM), then OnFrame. Until
// the first packet (FrameIdle) nothing is called.
func (s *Session) deliver(in *inFrame, due time.Time) {
	if s.pktJB != nil {
		s.deliverPackets(in, due)
		return
	}
	var st FrameStatus
	s.mu.Lock()
	in.coded, st = s.codedJB.Pop(in.coded[:0])
	s.mu.Unlock()
	s.stats.CountFrame(st)
	if st == FrameIdle {
		return
	}
	set := s.listeners.Load()
	var pcm []int16
	switch {
	case s.dec != nil: // G.722 or a deferred session: its taps need PCM, whoever listens
		if st == FramePlayed {
			in.pcm, _ = s.dec.Decode(in.pcm[:0], in.coded)
		} else {
			// A frame the jitter buffer filled plays as silence and
			// leaves the decoder's state alone.
			// (G.711 and G.722 both code 8000 bytes a second.)
			in.pcm, _ = s.dec.Conceal(in.pcm[:0], nil, len(in.coded)*s.dec.Rate()/ClockRate)
		}
		pcm = in.pcm
		if s.tap != nil {
			s.tap.Inbound(Frame{At: due, Samples: len(pcm), PCM: pcm, Status: st})
		}
	default:
		if s.tap != nil {
			s.tap.Inbound(Frame{At: due, Samples: len(in.coded), Coded: in.coded, Codec: s.opts.Codec, Status: st})
		}
		if set != nil && set.needPCM {
			in.pcm = s.opts.Codec.DecodeFrame(in.pcm[:0], in.coded)
			pcm = in.pcm
		}
	}
	s.feed(set, in.coded, s.opts.Codec, pcm)
	if s.opts.OnFrame != nil {
		s.opts.OnFrame(due)
	}
}

// feed hands one frame to every listener still on: coded in wire's code
// words (nil for Opus), pcm decoded (nil when no listener needs it).
// wire is the tick's (SettleCodec changes it with no tick running).
func (s *Session) feed(set *listenerSet, coded []byte, wire Codec, pcm []int16) {
	if set == nil {
		return
	}
	for _, l := range set.ls {
		if !l.off.Load() {
			l.push(coded, wire, pcm)
		}
	}
}

func minTime(a, b time.Time) time.Time {
	if b.Before(a) {
		return b
	}
	return a
}

func (s *Session) reportInterval() time.Duration {
	return time.Duration(float64(s.opts.RTCPInterval) * (0.5 + rand.Float64()))
}

func (s *Session) checkTimeout(now time.Time) {
	s.mu.Lock()
	d, fired := s.timeout, s.timedOut
	idle := now.Sub(time.Unix(0, s.lastRTP.Load()))
	if d <= 0 || fired || idle < d {
		s.mu.Unlock()
		return
	}
	s.timedOut = true
	s.mu.Unlock()
	if s.opts.OnTimeout != nil {
		s.opts.OnTimeout(fmt.Errorf("%w for %v", ErrMediaTimeout, idle.Round(time.Millisecond)))
	}
}

func (s *Session) sendReport(now time.Time) {
	if s.pair == nil {
		return // the Transport reports for itself
	}
	rtpTime := s.pacer.rtpTimeAt(now)
	s.mu.Lock()
	pkts := buildReport(now, s.pacer.SSRC(), s.opts.CNAME, &s.report, &s.rx, &s.stats, rtpTime)
	dst := s.remoteRTCP
	s.mu.Unlock()
	if !dst.IsValid() {
		return
	}
	raw, err := rtcp.Marshal(pkts)
	if err != nil {
		return
	}
	if st := s.srtp.Load(); st != nil {
		if raw, err = st.txRTCP.EncryptRTCP(nil, raw, nil); err != nil {
			return
		}
	}
	if _, err := s.pair.RTCP.WriteToUDPAddrPort(raw, dst); err == nil {
		s.stats.rtcpOut.Add(1)
	}
}
