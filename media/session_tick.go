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

// deliver pops the frame that is due and hands it to the callbacks: the
// code words to OnPayload (passthrough) and the tap, their decoding to
// OnAudio when it is set. Until the first packet (FrameIdle) nothing
// is called.
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
	if s.opts.Passthrough && s.opts.OnPayload != nil {
		s.opts.OnPayload(in.coded, st)
	}
	if s.opts.Tap != nil {
		s.opts.Tap.Inbound(Frame{At: due, Samples: len(in.coded), Coded: in.coded, Codec: s.opts.Codec, Status: st})
	}
	if s.opts.OnAudio != nil {
		in.pcm = s.opts.Codec.DecodeFrame(in.pcm[:0], in.coded)
		s.opts.OnAudio(in.pcm, st)
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
