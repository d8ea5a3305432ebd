package media

import (
	"encoding/binary"
	"net/netip"
	"time"

	"github.com/pion/rtcp"
	"github.com/pion/rtp"
)

// drainRTP reads every RTP packet queued on the socket (frame tick):
// SRTP authentication first, then the source latch, then the jitter
// buffer. Each keeps the time it arrived.
func (s *Session) drainRTP(now time.Time) {
	if s.rtpRx == nil {
		return // a Transport hands its packets to Receive
	}
	p := &s.rxPkt
	for {
		pkt, src, at, ok := s.rtpRx.read(now)
		if !ok {
			return
		}
		if st := s.srtp.Load(); st != nil {
			// Authenticated before anything trusts it: who cannot sign
			// the call's packets is a stranger, whatever its address.
			var err error
			if pkt, err = st.rxRTP.DecryptRTP(s.decBuf, pkt, &p.Header); err != nil {
				s.stranger(src)
				continue
			}
		}
		if p.Unmarshal(pkt) != nil || p.Version != 2 {
			s.stats.ignored.Add(1)
			continue
		}
		s.handleRTP(p, src, len(pkt), at)
	}
}

// handleRTP takes one (authenticated) RTP packet from src: the latch
// decides whether src may steer the call, then the packet is counted and
// buffered, or handed to OnEvent.
func (s *Session) handleRTP(p *rtp.Packet, src netip.AddrPort, size int, now time.Time) {
	src = netip.AddrPortFrom(src.Addr().Unmap(), src.Port())
	_, audio := CodecByPayloadType(p.PayloadType)
	event := p.PayloadType == s.opts.EventPayloadType
	s.mu.Lock()
	if s.pktJB != nil { // Opus: its dynamic payload type only
		audio = p.PayloadType == s.codecPT && !event
	}
	expected := p.PayloadType == s.codecPT || p.PayloadType == s.opts.Codec.PayloadType || event
	why := latchKeep
	if s.opts.Transport == nil { // a Transport has authenticated its peer
		why = s.latch.check(src, p.SSRC, expected, now)
	}
	if why == latchStranger {
		s.mu.Unlock()
		s.stranger(src)
		return
	}
	if why != latchKeep {
		// Symmetric RTP: answer where the peer's packets come from.
		cur := s.latch.current
		s.log.Info().Str("rtp_raddr", cur.String()).Str("rtp_prev_raddr", s.remote.String()).
			Stringer("latch", why).Uint32("rtp_ssrc", p.SSRC).Msg("rtp source latched")
		if cur != s.remote {
			s.setRemoteLocked(cur)
		}
		s.stats.latches.Add(1)
	}
	if !audio && !event && p.PayloadType != PayloadTypeCN {
		s.mu.Unlock()
		s.stats.ignored.Add(1)
		return
	}
	s.stats.packetsIn.Add(1)
	s.stats.bytesIn.Add(uint64(size))
	s.lastRTP.Store(now.UnixNano())
	if s.rx.update(p.SSRC, p.SequenceNumber, p.Timestamp, now) {
		s.log.Info().Uint32("rtp_ssrc", p.SSRC).Msg("rtp ssrc changed")
	}
	s.rx.publish(&s.stats)
	res := PushUnsupported
	if audio {
		res = s.jitter().Push(&p.Header, p.Payload)
	}
	s.mu.Unlock()
	if audio {
		s.stats.CountPush(res)
	}
	if event && s.opts.OnEvent != nil {
		s.opts.OnEvent(&p.Header, p.Payload)
	}
}

// Receive takes one RTP packet from the session's Transport (whose reader
// runs on its own goroutine), received at at: it is counted and buffered,
// or handed to OnEvent, as a packet read from a port pair is. The packet
// is not retained.
func (s *Session) Receive(p *rtp.Packet, at time.Time) {
	s.handleRTP(p, netip.AddrPort{}, p.MarshalSize(), at)
}

// stranger drops a packet from a source that may not steer the call: it
// is counted, and the first one of the call is logged.
func (s *Session) stranger(src netip.AddrPort) {
	if s.stats.strangers.Add(1) == 1 {
		s.log.Warn().Str("rtp_stranger", src.String()).Msg("rtp from a stranger dropped")
	}
	if s.opts.Strangers != nil {
		s.opts.Strangers.Inc()
	}
}

// drainRTCP reads every RTCP packet queued on the socket: the latch's
// check on the sender first (its SSRC is in clear, also in SRTCP), then
// SRTCP authentication, then the reports.
func (s *Session) drainRTCP(now time.Time) {
	if s.rtcpRx == nil {
		return
	}
	for {
		pkt, src, _, ok := s.rtcpRx.read(now)
		if !ok {
			return
		}
		if len(pkt) < 8 {
			continue
		}
		s.mu.Lock()
		ok = s.latch.rtcpFrom(src, binary.BigEndian.Uint32(pkt[4:8])) // SR/RR sender SSRC
		s.mu.Unlock()
		if !ok {
			s.stranger(src)
			continue
		}
		if st := s.srtp.Load(); st != nil {
			var err error
			if pkt, err = st.rxRTCP.DecryptRTCP(s.decBuf, pkt, nil); err != nil {
				s.stranger(src)
				continue
			}
		}
		pkts, err := rtcp.Unmarshal(pkt)
		if err != nil {
			continue
		}
		s.mu.Lock()
		s.stats.rtcpIn.Add(1)
		s.remoteRTCP = src
		handleReport(now, pkts, s.pacer.SSRC(), &s.report, &s.stats)
		s.mu.Unlock()
	}
}
