package dtmf

import (
	"testing"
	"time"

	"github.com/pion/rtp"
	"github.com/stretchr/testify/require"

	"switchboard/test/pcap"
)

// pcapPacket is one captured RTP packet.
type pcapPacket struct {
	at  time.Time
	rtp rtp.Packet
}

// readPcapRTP reads the RTP packets of a capture (test/pcap).
func readPcapRTP(t *testing.T, path string) []pcapPacket {
	t.Helper()
	pkts, err := pcap.ReadRTP(path)
	require.NoError(t, err)
	out := make([]pcapPacket, 0, len(pkts))
	for _, p := range pkts {
		out = append(out, pcapPacket{at: p.At, rtp: p.RTP})
	}
	return out
}
