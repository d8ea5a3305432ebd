package sip

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net"
	"os"
)

// udpReadBuffer is the SIP UDP socket's receive buffer. The kernel's
// default (208 KiB, about a hundred datagrams on loopback) overflowed in
// bursts at 1,000 call setups a second: an ACK and its BYE dropped
// together left the call waiting for an ACK while the caller, taking the
// 200 OK's retransmission for the answer to its BYE, was gone (0.2 to 1%
// of the calls, kept alive until the media timeout).
const udpReadBuffer = 4 << 20

func (s *Server) listen() error {
	var err error
	if s.udp, err = net.ListenPacket("udp", s.opts.Addr); err != nil {
		return fmt.Errorf("listen udp %s: %w", s.opts.Addr, err)
	}
	if u, ok := s.udp.(*net.UDPConn); ok {
		// The kernel caps it at net.core.rmem_max; an error leaves the
		// default, which still works at lower rates.
		if err := u.SetReadBuffer(udpReadBuffer); err != nil {
			s.log.Debug().Err(err).Msg("SIP UDP receive buffer left at the default")
		}
	}
	tcpAddr := s.opts.Addr
	host, port, _ := net.SplitHostPort(s.opts.Addr)
	if port == "0" {
		// Try the UDP port first so both transports share one port.
		_, p, _ := net.SplitHostPort(s.udp.LocalAddr().String())
		if s.tcp, err = net.Listen("tcp", net.JoinHostPort(host, p)); err == nil {
			return s.listenTLS()
		}
	}
	if s.tcp, err = net.Listen("tcp", tcpAddr); err != nil {
		return fmt.Errorf("listen tcp %s: %w", tcpAddr, err)
	}
	return s.listenTLS()
}

// clientTLS is the configuration of the TLS connections the server opens
// (a trunk's, a registrar's): the authorities of Options.TLSCA, else the
// system's; the peer's name checked.
func (s *Server) clientTLS() (*tls.Config, error) {
	conf := &tls.Config{MinVersion: tls.VersionTLS12}
	if s.opts.TLSCA == "" {
		return conf, nil
	}
	pem, err := os.ReadFile(s.opts.TLSCA)
	if err != nil {
		return nil, fmt.Errorf("sip tls ca: %w", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		return nil, fmt.Errorf("sip tls ca %s: no PEM certificate in it", s.opts.TLSCA)
	}
	conf.RootCAs = pool
	return conf, nil
}

func (s *Server) listenTLS() error {
	if s.opts.TLSCert == "" {
		return nil
	}
	cert, err := tls.LoadX509KeyPair(s.opts.TLSCert, s.opts.TLSKey)
	if err != nil {
		return fmt.Errorf("sip tls certificate: %w", err)
	}
	conf := &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
	if s.tls, err = tls.Listen("tcp", s.opts.TLSAddr, conf); err != nil {
		return fmt.Errorf("listen tls %s: %w", s.opts.TLSAddr, err)
	}
	return nil
}
