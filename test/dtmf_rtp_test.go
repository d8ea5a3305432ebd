package test

import (
	be "encoding/binary"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"switchboard/dtmf"
	"switchboard/test/pcap"
)

// sippPcaps is where sip-tester installs its captured RFC 4733 events
// (PT 101, one key each, 7 packets plus 3 end packets, from one stream).
const sippPcaps = "/usr/share/sip-tester"

// scenarioData is the data of testdata/dtmf/call.xml.tmpl.
type scenarioData struct {
	// PT is the telephone-event payload type offered (the pcaps use 101).
	PT int
	// NoEvents offers PCMU alone.
	NoEvents bool
	Steps    []step
	// WaitBye, when set, waits that many ms for the appliance's BYE
	// instead of hanging up.
	WaitBye int
}

// step is one thing the sipp caller does in the call.
type step struct {
	Pcap               string
	InfoType, InfoBody string
	// Pause after the step, in ms (a pcap step defaults to 350; -1: none).
	Pause int
}

func pcapSteps(dir string, names ...string) []step {
	var s []step
	for _, n := range names {
		s = append(s, step{Pcap: filepath.Join(dir, "dtmf_2833_"+n+".pcap")})
	}
	return s
}

// TestDTMFSippRFC4733 has sipp play its captured telephone-events 1, 2, 3
// and # inside a call to an agent: the model receives one user message
// with exactly 123, finished by #, then response.create. The same again
// with the marker bits cleared (the marker is prone to loss; RFC 4733
// receivers key on the timestamp).
func TestDTMFSippRFC4733(t *testing.T) {
	t.Parallel()
	stripped := t.TempDir()
	for _, n := range []string{"1", "2", "3", "pound"} {
		name := "dtmf_2833_" + n + ".pcap"
		clearMarkers(t, filepath.Join(sippPcaps, name), filepath.Join(stripped, name))
	}
	for _, tc := range []struct{ name, dir string }{{"as captured", sippPcaps}, {"marker bits cleared", stripped}} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			e := newDTMFEnv(t)
			num := e.number(t, nil)
			done := make(chan struct{})
			go func() {
				defer close(done)
				e.sipp(t, sippScenario(t, "call", scenarioData{PT: 101, Steps: pcapSteps(tc.dir, "1", "2", "3", "pound")}), num)
			}()
			c := e.accept(t)
			ctx := ctxFor(t, 20*time.Second)
			require.Equal(t, modelText("123", dtmf.FlushHash), userText(t, ctx, c))
			<-done
			require.Equal(t, []string{"1/rtp", "2/rtp", "3/rtp", "#/rtp"}, e.keyLogs())
			require.Len(t, userTexts(c), 1, "one message for one entry")
		})
	}
}

// TestDTMFSippINFO sends the keys as SIP INFO in both body formats
// (application/dtmf-relay with Signal and Duration, and application/dtmf).
func TestDTMFSippINFO(t *testing.T) {
	t.Parallel()
	e := newDTMFEnv(t)
	num := e.number(t, nil)
	steps := []step{
		{InfoType: dtmf.ContentTypeDTMFRelay, InfoBody: "Signal=4\nDuration=160\n", Pause: 100},
		{InfoType: dtmf.ContentTypeDTMF, InfoBody: "5", Pause: 100},
		{InfoType: dtmf.ContentTypeDTMFRelay, InfoBody: "Signal=*\nDuration=160\n", Pause: 100},
		{InfoType: dtmf.ContentTypeDTMFRelay, InfoBody: "Signal=11\nDuration=160\n", Pause: 100}, // event code of #
		{InfoType: dtmf.ContentTypeDTMF, InfoBody: "7", Pause: 100},
		{InfoType: dtmf.ContentTypeDTMF, InfoBody: "#", Pause: 300},
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		e.sipp(t, sippScenario(t, "call", scenarioData{PT: 101, Steps: steps}), num)
	}()
	c := e.accept(t)
	ctx := ctxFor(t, 20*time.Second)
	require.Equal(t, modelText("45*", dtmf.FlushHash), userText(t, ctx, c))
	require.Equal(t, modelText("7", dtmf.FlushHash), userText(t, ctx, c))
	<-done
	require.Equal(t, []string{"4/info", "5/info", "*/info", "#/info", "7/info", "#/info"}, e.keyLogs())
}

// clearMarkers copies a classic pcap of Ethernet/IPv4/UDP/RTP, clearing
// the RTP marker bit of every packet and fixing the UDP checksum.
func clearMarkers(t *testing.T, src, dst string) {
	t.Helper()
	f, err := pcap.Open(src)
	require.NoError(t, err)
	n, cleared := 0, 0
	require.NoError(t, f.Frames(func(_ time.Time, frame []byte) error {
		n++
		ip, udp, err := pcap.UDP(frame)
		require.NoError(t, err)
		rtp := udp[8:]
		require.Equal(t, byte(2), rtp[0]>>6, "RTP version 2")
		if rtp[1]&0x80 != 0 {
			cleared++
		}
		if orig := be.BigEndian.Uint16(udp[6:]); orig != 0 {
			be.BigEndian.PutUint16(udp[6:], 0)
			require.Equal(t, orig, udpChecksum(ip[12:16], ip[16:20], udp[:be.BigEndian.Uint16(udp[4:])]), "checksum of the capture")
		}
		rtp[1] &^= 0x80
		be.BigEndian.PutUint16(udp[6:], 0)
		be.BigEndian.PutUint16(udp[6:], udpChecksum(ip[12:16], ip[16:20], udp[:be.BigEndian.Uint16(udp[4:])]))
		return nil
	}))
	require.Positive(t, n)
	require.Equal(t, 1, cleared, "the captured event has one marker bit")
	require.NoError(t, os.WriteFile(dst, f.Data, 0o600))
}

// udpChecksum is the RFC 768 checksum over the IPv4 pseudo-header and the
// datagram (whose checksum field is zero).
func udpChecksum(src, dst, dgram []byte) uint16 {
	var sum uint32
	add := func(b []byte) {
		for i := 0; i+1 < len(b); i += 2 {
			sum += uint32(b[i])<<8 | uint32(b[i+1])
		}
		if len(b)%2 == 1 {
			sum += uint32(b[len(b)-1]) << 8
		}
	}
	add(src)
	add(dst)
	sum += 17 + uint32(len(dgram))
	add(dgram)
	for sum > 0xffff {
		sum = sum>>16 + sum&0xffff
	}
	c := ^uint16(sum)
	if c == 0 {
		c = 0xffff
	}
	return c
}
