package sip

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"time"

	"github.com/emiago/sipgo/sip"
)

// Answer sends 200 OK with the SDP answer (media at local, or at
// Options.RTPPublicIP with local's port when set), retransmits it over UDP
// (RFC 3261 section 13.3.1.4) and waits for the ACK. Without ACK within
// Options.AckTimeout the call is hung up and ErrAckTimeout returned.
//
// A delayed offer is answered with our offer and the caller's answer is
// taken from the ACK; when our offer already went out in a reliable 180,
// Answer first waits for its PRACK, which carries the answer (RFC 3262
// section 3: no 2xx before the PRACK of a provisional response with SDP).
//
// A placed call (Place) is dialed instead: the INVITE goes out with our
// offer at local and Answer returns once the callee answered (see dial).
func (c *Call) Answer(ctx context.Context, local netip.AddrPort) error {
	if c.placed != nil {
		return c.dial(ctx, local)
	}
	c.mu.Lock()
	if c.state != stateEarly {
		c.mu.Unlock()
		return fmt.Errorf("answer: %w", c.stateErr())
	}
	offerSent, reliable := c.offerSent, c.reliable
	c.mu.Unlock()
	if reliable {
		// The 2xx waits for the PRACK of a reliable provisional response
		// in flight (RFC 3262 section 3 requires it when that response
		// carried our offer; otherwise it keeps the order simple).
		if err := c.earlyAnswer(ctx, offerSent); err != nil {
			return fmt.Errorf("answer: %w", err)
		}
	}
	c.mu.Lock()
	if c.state != stateEarly {
		c.mu.Unlock()
		return fmt.Errorf("answer: %w", c.stateErr())
	}
	var body []byte
	var err error
	switch {
	case offerSent: // offer/answer complete: no SDP in the 2xx
	case c.delayed:
		body, err = c.localOffer(local)
	default:
		body, err = c.sdp.answer(c.offer, c.params, local, c.srv.opts.RTPPublicIP, c.params.Direction.Reverse())
	}
	if err != nil {
		c.mu.Unlock()
		return fmt.Errorf("answer: %w", err)
	}
	c.local, c.state = local, stateAnswering
	c.mu.Unlock()
	res := c.response(c.invite, 200, "OK", body)
	err = c.tx.Respond(res)
	c.finalResponse()
	if err != nil {
		c.end(err)
		return fmt.Errorf("answer: %w", err)
	}
	c.log.Info().Str("rtp_laddr", local.String()).Msg("call answered")
	ack, err := c.awaitAck(ctx, res, c.invite.CSeq().SeqNo, c.tx)
	if err != nil {
		switch {
		case c.ctx.Err() != nil:
			// The call ended first: most often the caller's BYE overtook
			// its ACK (sent together, handled on their own goroutines).
			c.log.Debug().Err(err).Msg("call ended before the ACK of its 200 OK")
		case errors.Is(err, ErrAckTimeout) || ctx.Err() != nil:
			c.log.Warn().Err(err).Msg("no ACK for 200 OK: hanging up")
			_ = c.hangup(context.Background(), ErrAckTimeout, "no ACK")
		}
		return fmt.Errorf("answer: %w", err)
	}
	if c.delayed && !offerSent {
		// RFC 3264 section 4: the ACK carries the answer to our offer.
		params, err := answerMatch(ack.Body(), c.offered)
		if err != nil {
			c.log.Warn().Err(err).Msg("no usable SDP answer in the ACK: hanging up")
			_ = c.hangup(context.Background(), ErrNoAnswer, "no usable SDP answer in ACK")
			return fmt.Errorf("answer: %w: %w", ErrNoAnswer, err)
		}
		c.setAnswered(params)
	}
	c.mu.Lock()
	if c.state == stateAnswering {
		c.state = stateConfirmed
	}
	c.mu.Unlock()
	if c.timer.Load() != nil {
		go c.runSessionTimer()
	}
	return nil
}

// earlyAnswer waits for the PRACK of the reliable provisional response
// in flight, if any; when that response carried our offer (withOffer), it
// takes the caller's answer from the PRACK. Without PRACK the INVITE is
// refused with 504, without a usable answer with 488.
func (c *Call) earlyAnswer(ctx context.Context, withOffer bool) error {
	p, err := c.awaitPrack(ctx)
	if err != nil {
		if errors.Is(err, errNoPrack) {
			_ = c.Reject(504, "Server Time-out")
		}
		return err
	}
	if !withOffer {
		return nil
	}
	var params MediaParams
	err = errNoSDP
	if p != nil {
		params, err = answerMatch(p.answer, c.offered)
	}
	if err != nil {
		c.log.Warn().Err(err).Msg("no usable SDP answer in the PRACK: refusing the call")
		_ = c.Reject(488, "Not Acceptable Here")
		return fmt.Errorf("%w: %w", ErrNoAnswer, err)
	}
	c.setAnswered(params)
	return nil
}

// setAnswered records the media the caller's answer chose.
func (c *Call) setAnswered(params MediaParams) {
	c.mu.Lock()
	c.initial, c.params = params, params
	c.mu.Unlock()
	c.log.Info().Str("media", params.String()).Msg("caller answered our offer")
}

// awaitAck waits for the ACK with CSeq seq, retransmitting res over
// unreliable transports with T1 doubling up to T2.
func (c *Call) awaitAck(ctx context.Context, res *sip.Response, seq uint32, tx sip.ServerTransaction) (*sip.Request, error) {
	interval := sip.T1
	retransmit := time.NewTimer(interval)
	defer retransmit.Stop()
	if sip.IsReliable(c.dlg.transport) {
		retransmit.Stop()
	}
	deadline := time.NewTimer(c.srv.opts.AckTimeout)
	defer deadline.Stop()
	var txAcks <-chan *sip.Request
	if stx, ok := tx.(interface{ Acks() <-chan *sip.Request }); ok {
		txAcks = stx.Acks()
	}
	for {
		select {
		case ack := <-c.acks:
			if ack.CSeq().SeqNo == seq {
				return ack, nil
			}
		case ack := <-txAcks:
			return ack, nil
		case <-retransmit.C:
			if err := tx.Respond(res); err != nil {
				c.log.Debug().Err(err).Msg("2xx retransmission failed")
			}
			interval = min(2*interval, sip.T2)
			retransmit.Reset(interval)
		case <-deadline.C:
			return nil, ErrAckTimeout
		case <-c.ctx.Done():
			return nil, context.Cause(c.ctx)
		case <-ctx.Done():
			return nil, context.Cause(ctx)
		}
	}
}

func (c *Call) ackReceived(req *sip.Request) {
	select {
	case c.acks <- req:
	default:
	}
}
