package test

import (
	be "encoding/binary"
	"errors"
	"net"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// udpDatagram is one UDP datagram seen on the loopback interface.
type udpDatagram struct {
	src, dst uint16 // ports
	payload  []byte
}

// sniffer captures the IPv4 UDP datagrams on lo whose source or
// destination port is in [lo, hi], with a packet socket (AF_PACKET: it
// needs CAP_NET_RAW, i.e. root, which `make deps` needs anyway). It sees
// the bytes as they cross the interface, whatever either end does.
type sniffer struct {
	fd     int
	lo, hi uint16
	wg     sync.WaitGroup

	mu   sync.Mutex
	seen []udpDatagram
}

// packetOutgoing is PACKET_OUTGOING of linux/if_packet.h.
const packetOutgoing = 4

func htons(v uint16) uint16 { return v<<8 | v>>8 }

func newSniffer(t *testing.T, lo, hi uint16) *sniffer {
	t.Helper()
	const ethPIP = 0x0800
	fd, err := syscall.Socket(syscall.AF_PACKET, syscall.SOCK_DGRAM, int(htons(ethPIP)))
	require.NoError(t, err, "a packet capture on lo needs CAP_NET_RAW: run the tests as root (as `make deps` is)")
	ifi, err := net.InterfaceByName("lo")
	require.NoError(t, err)
	require.NoError(t, syscall.Bind(fd, &syscall.SockaddrLinklayer{Protocol: htons(ethPIP), Ifindex: ifi.Index}))
	// A read timeout lets the reader notice close.
	require.NoError(t, syscall.SetsockoptTimeval(fd, syscall.SOL_SOCKET, syscall.SO_RCVTIMEO, &syscall.Timeval{Usec: 100000}))
	s := &sniffer{fd: fd, lo: lo, hi: hi}
	done := make(chan struct{})
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		buf := make([]byte, 65536)
		for {
			select {
			case <-done:
				return
			default:
			}
			n, from, err := syscall.Recvfrom(fd, buf, 0)
			if err != nil {
				if errors.Is(err, syscall.EAGAIN) || errors.Is(err, syscall.EINTR) {
					continue
				}
				return
			}
			if ll, ok := from.(*syscall.SockaddrLinklayer); ok && ll.Pkttype == packetOutgoing {
				continue // lo shows each datagram leaving and arriving: keep one
			}
			s.take(buf[:n])
		}
	}()
	t.Cleanup(func() {
		close(done)
		s.wg.Wait()
		syscall.Close(fd)
	})
	return s
}

// take keeps an IPv4 UDP datagram of the watched ports.
func (s *sniffer) take(ip []byte) {
	if len(ip) < 20 || ip[0]>>4 != 4 || ip[9] != syscall.IPPROTO_UDP {
		return
	}
	ihl := int(ip[0]&0x0f) * 4
	if len(ip) < ihl+8 {
		return
	}
	udp := ip[ihl:]
	src, dst := be.BigEndian.Uint16(udp[0:2]), be.BigEndian.Uint16(udp[2:4])
	in := func(p uint16) bool { return p >= s.lo && p <= s.hi }
	if !in(src) && !in(dst) {
		return
	}
	ulen := int(be.BigEndian.Uint16(udp[4:6]))
	if ulen < 8 || ulen > len(udp) {
		return
	}
	s.mu.Lock()
	s.seen = append(s.seen, udpDatagram{src: src, dst: dst, payload: append([]byte(nil), udp[8:ulen]...)})
	s.mu.Unlock()
}

// datagrams returns what was captured so far.
func (s *sniffer) datagrams() []udpDatagram {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]udpDatagram(nil), s.seen...)
}

// waitQuiet waits until the capture has taken everything sent so far: it
// sends a marker datagram (too short to be RTP) to the watched range and
// waits to see it, the capture reading the interface in order.
func (s *sniffer) waitQuiet(t *testing.T) {
	t.Helper()
	conn, err := net.DialUDP("udp4", nil, &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1), Port: int(s.lo)})
	require.NoError(t, err)
	defer conn.Close()
	marker := []byte("sb-quiet")
	_, err = conn.Write(marker)
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		for _, dg := range s.datagrams() {
			if dg.dst == s.lo && string(dg.payload) == string(marker) {
				return true
			}
		}
		return false
	}, 5*time.Second, 5*time.Millisecond, "the capture did not see its marker")
}
