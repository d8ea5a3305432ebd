package sip

import (
	"bytes"
	"net"
	"strconv"
	"strings"
	"time"
)

// tapConn watches the softphone's UDP socket for provisional responses in the
// order they arrive. sipgo hands each response to the transaction layer in
// its own goroutine, so a 100 may overtake a 180 and a 1xx handled after
// the 2xx is dropped; reading them here, before sipgo, keeps the
// timeline's provisional responses complete and in order.
type tapConn struct {
	net.PacketConn
	p *Softphone
}

func (t tapConn) ReadFrom(b []byte) (int, net.Addr, error) {
	for {
		n, addr, err := t.PacketConn.ReadFrom(b)
		if err == nil && t.p.closing.Load() && !bytes.HasPrefix(b[:n], []byte("SIP/2.0 ")) {
			continue // closing: no new server transaction (see Softphone.Close)
		}
		if err == nil && n > 12 && bytes.HasPrefix(b, []byte("SIP/2.0 1")) {
			t.p.provisional(b[:n])
		}
		return n, addr, err
	}
}

// provisional reports a 1xx of an INVITE to its call's timeline.
func (p *Softphone) provisional(msg []byte) {
	at := time.Now()
	head, _, _ := bytes.Cut(msg, []byte("\r\n\r\n"))
	lines := strings.Split(string(head), "\r\n")
	status, reason, ok := strings.Cut(strings.TrimPrefix(lines[0], "SIP/2.0 "), " ")
	code, err := strconv.Atoi(status)
	if !ok || err != nil {
		return
	}
	var callID, cseq string
	for _, l := range lines[1:] {
		name, value, ok := strings.Cut(l, ":")
		if !ok {
			continue
		}
		switch strings.ToLower(strings.TrimSpace(name)) {
		case "call-id", "i":
			callID = strings.TrimSpace(value)
		case "cseq":
			cseq = strings.TrimSpace(value)
		}
	}
	if !strings.HasSuffix(cseq, "INVITE") {
		return
	}
	p.mu.Lock()
	var c *SoftphoneCall
	for _, oc := range p.calls {
		if oc.dlg.callID == callID {
			c = oc
			break
		}
	}
	p.mu.Unlock()
	if c != nil && c.onEvent != nil {
		c.onEvent(SoftphoneEvent{Time: at, Kind: "provisional", Status: code, Reason: reason})
	}
}
