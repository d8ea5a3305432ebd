package media

import (
	"time"

	"github.com/pion/rtcp"
)

// ntpEpochOffset is the number of seconds from 1900 (NTP) to 1970 (Unix).
const ntpEpochOffset = 2208988800

// ntpTime converts t to the 64-bit NTP format of RTCP sender reports.
func ntpTime(t time.Time) uint64 {
	secs := uint64(t.Unix()) + ntpEpochOffset
	frac := uint64(t.Nanosecond()) << 32 / uint64(time.Second)
	return secs<<32 | frac
}

// ntpMiddle is the middle 32 bits of the NTP time, the unit of LSR and
// RTT arithmetic (RFC 3550 §6.4.1).
func ntpMiddle(t time.Time) uint32 { return uint32(ntpTime(t) >> 16) }

// reportState is what a session remembers between RTCP reports. Guarded
// by the session's mutex.
type reportState struct {
	lastSR        uint32    // middle 32 bits of the peer's last SR NTP time
	lastSRArrival time.Time // when it arrived
	sentSinceLast bool      // we sent RTP since our last report: send an SR
}

// buildReport returns the compound packet of one report interval: an SR
// when we sent RTP since the last report, otherwise an RR, with a
// reception report block when we receive, followed by SDES CNAME
// (RFC 3550 §6.1: every compound packet carries a CNAME).
func buildReport(now time.Time, ssrc uint32, cname string, st *reportState, rx *rxStats, s *Stats, rtpTime uint32) []rtcp.Packet {
	var blocks []rtcp.ReceptionReport
	if rx.started {
		rr := rtcp.ReceptionReport{
			SSRC:               rx.ssrc,
			FractionLost:       rx.fractionLost(),
			TotalLost:          uint32(min(max(rx.lost(), 0), 0x7FFFFF)),
			LastSequenceNumber: rx.extendedMax(),
			Jitter:             rx.jitter(),
		}
		if !st.lastSRArrival.IsZero() {
			rr.LastSenderReport = st.lastSR
			rr.Delay = uint32(now.Sub(st.lastSRArrival) * 65536 / time.Second)
		}
		blocks = append(blocks, rr)
	}
	var first rtcp.Packet
	if st.sentSinceLast {
		first = &rtcp.SenderReport{
			SSRC:        ssrc,
			NTPTime:     ntpTime(now),
			RTPTime:     rtpTime,
			PacketCount: uint32(s.packetsOut.Load()),
			OctetCount:  uint32(s.bytesOut.Load()),
			Reports:     blocks,
		}
	} else {
		first = &rtcp.ReceiverReport{SSRC: ssrc, Reports: blocks}
	}
	st.sentSinceLast = false
	return []rtcp.Packet{first, rtcp.NewCNAMESourceDescription(ssrc, cname)}
}

// handleReport records what an incoming compound RTCP packet says: the
// peer's SR time (for our LSR/DLSR) and its report block about our SSRC.
func handleReport(now time.Time, pkts []rtcp.Packet, ourSSRC uint32, st *reportState, s *Stats) {
	for _, p := range pkts {
		var blocks []rtcp.ReceptionReport
		switch p := p.(type) {
		case *rtcp.SenderReport:
			st.lastSR = uint32(p.NTPTime >> 16)
			st.lastSRArrival = now
			blocks = p.Reports
		case *rtcp.ReceiverReport:
			blocks = p.Reports
		}
		for _, b := range blocks {
			if b.SSRC != ourSSRC {
				continue
			}
			s.remoteFractionLost.Store(uint32(b.FractionLost))
			lost := int64(b.TotalLost & 0xFFFFFF)
			if lost&0x800000 != 0 { // 24-bit signed
				lost -= 1 << 24
			}
			s.remoteLost.Store(lost)
			s.remoteJitter.Store(b.Jitter)
			if b.LastSenderReport != 0 {
				// RFC 3550 §6.4.1: RTT = A - LSR - DLSR, in 1/65536 s.
				rtt := ntpMiddle(now) - b.LastSenderReport - b.Delay
				if rtt < 65536*10 { // a wrapped (negative) value is a clock glitch
					s.rtt.Store(int64(rtt) * int64(time.Second) / 65536)
				}
			}
		}
	}
}
