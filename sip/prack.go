package sip

import (
	"context"
	"fmt"
	"net/netip"
	"strconv"
	"strings"
	"time"

	"github.com/emiago/sipgo/sip"
)

// tag100rel is the option tag of reliable provisional responses (RFC
// 3262). It is a supported extension: an INVITE that requires it gets
// its provisional responses reliably, with RSeq, retransmitted until
// PRACKed.
const tag100rel = "100rel"

// Delayed offers (an INVITE without SDP): what we offer in our first
// reliable response. The caller's answer picks among these.
const (
	delayedOfferDTMF  = 101
	delayedOfferPtime = defaultPtime
)

// delayedOfferParams is the media assumed for our offer of codecs until
// the peer's answer arrives: our first codec, no address yet.
func delayedOfferParams(codecs []Codec) MediaParams {
	return MediaParams{Codec: codecs[0], DTMFPayloadType: delayedOfferDTMF, Ptime: delayedOfferPtime, Direction: SendRecv}
}

// requires reports whether req's Require headers name tag.
func requires(req *sip.Request, tag string) bool {
	for _, h := range req.GetHeaders("Require") {
		for _, t := range strings.Split(h.Value(), ",") {
			if strings.EqualFold(strings.TrimSpace(t), tag) {
				return true
			}
		}
	}
	return false
}

// reliableResponse is a reliable provisional response waiting for its
// PRACK (RFC 3262 section 3).
type reliableResponse struct {
	rseq   uint32
	res    *sip.Response
	offer  bool          // it carries our SDP offer: the PRACK carries the answer
	acked  chan struct{} // closed by the matching PRACK
	answer []byte        // the PRACK's body (set before acked is closed)
}

// prackTimeout is RFC 3262's bound on retransmitting a reliable
// provisional response: 64*T1 without PRACK and the INVITE is refused.
func prackTimeout() time.Duration { return 64 * sip.T1 }

// DelayedOffer reports whether the INVITE came without SDP: our offer
// goes in the 200 OK (or a reliable 180) and the caller answers in the
// ACK (or the PRACK).
func (c *Call) DelayedOffer() bool { return c.delayed }

// ReliableProvisional reports whether the caller required 100rel: the
// call's provisional responses go out reliably and are PRACKed.
func (c *Call) ReliableProvisional() bool { return c.reliable }

// sendReliable sends a provisional response reliably: Require: 100rel and
// RSeq, retransmitted with T1 doubling until its PRACK. Only one may be
// unacknowledged at a time (RFC 3262 section 3).
func (c *Call) sendReliable(status int, reason string, body []byte) error {
	c.mu.Lock()
	if c.state != stateEarly {
		c.mu.Unlock()
		return fmt.Errorf("send %d: %w", status, c.stateErr())
	}
	if p := c.pending; p != nil {
		select {
		case <-p.acked:
		default:
			c.mu.Unlock()
			return fmt.Errorf("send %d: %w", status, errPrackPending)
		}
	}
	c.rseq++
	res := c.response(c.invite, status, reason, body)
	res.AppendHeader(sip.NewHeader("Require", tag100rel))
	res.AppendHeader(sip.NewHeader("RSeq", strconv.FormatUint(uint64(c.rseq), 10)))
	p := &reliableResponse{rseq: c.rseq, res: res, offer: len(body) > 0, acked: make(chan struct{})}
	c.pending = p
	c.mu.Unlock()
	if err := c.tx.Respond(res); err != nil {
		return fmt.Errorf("send %d: %w", status, err)
	}
	go c.retransmitReliable(p)
	return nil
}

// retransmitReliable resends p until its PRACK, the final response or the
// end of the call; after prackTimeout the INVITE is refused with 504.
func (c *Call) retransmitReliable(p *reliableResponse) {
	interval := sip.T1
	t := time.NewTimer(interval)
	defer t.Stop()
	deadline := time.NewTimer(prackTimeout())
	defer deadline.Stop()
	for {
		select {
		case <-p.acked:
			return
		case <-c.ctx.Done():
			return
		case <-c.finalSent:
			return
		case <-deadline.C:
			c.log.Warn().Uint32("rseq", p.rseq).Msg("no PRACK for a reliable provisional response: refusing the call")
			_ = c.Reject(504, "Server Time-out")
			return
		case <-t.C:
			if !sip.IsReliable(c.dlg.transport) {
				if err := c.tx.Respond(p.res); err != nil {
					c.log.Debug().Err(err).Msg("reliable provisional retransmission failed")
				}
			}
			interval *= 2
			t.Reset(interval)
		}
	}
}

// onPrack takes a PRACK (RFC 3262 section 3): one that matches the
// reliable response waiting for it acknowledges it (and, when that
// response carried our offer, brings the caller's answer); any other gets
// 481.
func (c *Call) onPrack(req *sip.Request, tx sip.ServerTransaction) {
	rseq, cseq, method, ok := parseRAck(req)
	c.mu.Lock()
	p := c.pending
	match := ok && p != nil && rseq == p.rseq && cseq == c.invite.CSeq().SeqNo && strings.EqualFold(method, string(sip.INVITE))
	c.mu.Unlock()
	if !match {
		c.srv.respond(req, tx, 481, "Call/Transaction Does Not Exist", nil)
		return
	}
	// The PRACK is answered before Answer may go on: its 200 precedes
	// the INVITE's.
	c.srv.respond(req, tx, 200, "OK", nil)
	c.prackOnce(p, func() {
		if p.offer {
			p.answer = append([]byte(nil), req.Body()...)
		}
		close(p.acked)
	})
}

// prackOnce runs f for the first PRACK of p only (a PRACK retransmitted
// past its transaction gets the same 200 and changes nothing).
func (c *Call) prackOnce(p *reliableResponse, f func()) {
	c.mu.Lock()
	defer c.mu.Unlock()
	select {
	case <-p.acked:
	default:
		f()
	}
}

// parseRAck reads `RAck: <rseq> <cseq> <method>`.
func parseRAck(req *sip.Request) (rseq, cseq uint32, method string, ok bool) {
	h := req.GetHeader("RAck")
	if h == nil {
		return 0, 0, "", false
	}
	f := strings.Fields(h.Value())
	if len(f) != 3 {
		return 0, 0, "", false
	}
	r, err1 := strconv.ParseUint(f[0], 10, 32)
	n, err2 := strconv.ParseUint(f[1], 10, 32)
	if err1 != nil || err2 != nil || r == 0 {
		return 0, 0, "", false
	}
	return uint32(r), uint32(n), f[2], true
}

// MediaReady tells the call where our RTP is before it is answered. A
// delayed offer under 100rel needs it: our offer must go in the first
// reliable response, so the 180 Ringing held back by Ringing goes out now,
// reliably, carrying the offer; the PRACK brings the answer.
func (c *Call) MediaReady(local netip.AddrPort) error {
	c.mu.Lock()
	held := c.ringHeld
	c.ringHeld = false
	c.local = local
	var body []byte
	var err error
	if held {
		body, err = c.localOffer(local)
	}
	c.mu.Unlock()
	if !held {
		return nil
	}
	if err != nil {
		return fmt.Errorf("ringing with offer: %w", err)
	}
	if err := c.sendReliable(180, "Ringing", body); err != nil {
		return err
	}
	c.mu.Lock()
	c.offerSent = true
	c.mu.Unlock()
	return nil
}

// localOffer builds our offer for a delayed-offer call (c.mu held).
func (c *Call) localOffer(local netip.AddrPort) ([]byte, error) {
	if ip := c.srv.opts.RTPPublicIP; ip.IsValid() {
		local = netip.AddrPortFrom(ip, local.Port())
	}
	return c.sdp.offer(local, c.offered, delayedOfferDTMF, delayedOfferPtime, SendRecv, nil)
}

// awaitPrack waits for the PRACK of the reliable response still pending,
// if any, and returns it (nil when none was pending).
func (c *Call) awaitPrack(ctx context.Context) (*reliableResponse, error) {
	c.mu.Lock()
	p := c.pending
	c.mu.Unlock()
	if p == nil {
		return nil, nil
	}
	t := time.NewTimer(prackTimeout())
	defer t.Stop()
	select {
	case <-p.acked:
		return p, nil
	case <-t.C:
		return nil, errNoPrack
	case <-c.ctx.Done():
		return nil, context.Cause(c.ctx)
	case <-ctx.Done():
		return nil, context.Cause(ctx)
	}
}
