package sip

import (
	"net"
	"net/netip"
	"sync"
)

// guardedListener is what the TCP and TLS transports accept from: it
// closes at once the connections of blocked sources and of sources that
// already hold Options.SourceMaxConnections (each connection costs a
// goroutine and a 64 kB read buffer in sipgo, so an open door would let
// one host take the memory).
type guardedListener struct {
	net.Listener
	s *Server
}

func (l guardedListener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		src := netAddrPort(c.RemoteAddr()).Addr()
		if l.s.shut(src) || !l.s.openConn(src) {
			_ = c.Close()
			continue
		}
		return &streamConn{Conn: c, s: l.s, src: src}, nil
	}
}

// streamConn gives its source's place back when it is closed.
type streamConn struct {
	net.Conn
	s    *Server
	src  netip.Addr
	once sync.Once
}

func (c *streamConn) Close() error {
	c.once.Do(func() { c.s.closeConn(c.src) })
	return c.Conn.Close()
}

// openConn takes a connection place for src, or reports that it has none
// left.
func (s *Server) openConn(src netip.Addr) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.conns[src] >= s.opts.SourceMaxConnections {
		s.dropped.Add(1)
		return false
	}
	s.conns[src]++
	return true
}

func (s *Server) closeConn(src netip.Addr) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.conns[src]--; s.conns[src] <= 0 {
		delete(s.conns, src)
	}
}
