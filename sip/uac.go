package sip

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/emiago/sipgo"
	"github.com/emiago/sipgo/sip"
	"github.com/icholy/digest"
)

// The user-agent client of one INVITE, shared by the calls the Server
// places (Place) and by the Softphone: one state machine from the INVITE
// to a confirmed dialog or a failure (RFC 3261 sections 13.2 and 12.1.2).
// sipgo's client transaction retransmits the INVITE and ACKs its error
// responses; what a transaction user decides is here: answering a digest
// challenge, CANCEL when the caller gives up, the ACK of a 2xx (and its
// re-sending), the route set, the SDP answer.
//
//	          provisional                challenge (once, credentials),
//	                                     422 (once, a longer session timer)
//	calling ──────────────▶ proceeding ──────────────▶ calling (new INVITE)
//	   │  \                     │
//	   │   \ 2xx                │ 2xx ───────────────▶ confirmed (ACK)
//	   │    ▶ confirmed         │ error response ────▶ terminated
//	   │                        │ ctx done ──────────▶ cancelling (CANCEL)
//	   └── (the same from calling)
//	cancelling: 487 or any final error ▶ terminated; 2xx ▶ terminated (ACK, then BYE)

// cancelTimeout bounds a CANCEL transaction: the peer answers 200 at once
// (RFC 3261 section 9.2), so 5 s covers retransmissions on a lossy path.
const cancelTimeout = 5 * time.Second

// uacState is where an INVITE we sent stands.
type uacState int

const (
	uacCalling    uacState = iota // INVITE sent, no response yet
	uacProceeding                 // a provisional response came
	uacCancelling                 // the caller gave up: CANCEL sent, the final response awaited
	uacConfirmed                  // a 2xx came and was ACKed: the dialog is up
	uacTerminated                 // refused, failed, or cancelled
)

func (s uacState) String() string {
	switch s {
	case uacCalling:
		return "calling"
	case uacProceeding:
		return "proceeding"
	case uacCancelling:
		return "cancelling"
	case uacConfirmed:
		return "confirmed"
	case uacTerminated:
		return "terminated"
	}
	return fmt.Sprintf("uacState(%d)", int(s))
}

// uacInput is what happens to an INVITE in flight.
type uacInput int

const (
	uacProvisional uacInput = iota // a 1xx but 100
	uacSuccess                     // a 2xx
	uacChallenge                   // a 401/407 we have credentials for, not answered yet
	uacTooShort                    // a 422 (RFC 4028): our session timer is below the peer's Min-SE, not retried yet
	uacFailure                     // another final response
	uacGiveUp                      // the caller's context ended (ring timeout, hangup)
	uacBroken                      // the transaction failed (timeout, transport), or no final response after our CANCEL
)

// uacAction is what the state machine asks the driver to do.
type uacAction int

const (
	uacNone         uacAction = iota // nothing (an input the state ignores)
	uacReport                        // pass the provisional response up
	uacAuthenticate                  // send the INVITE again with credentials
	uacLengthen                      // send the INVITE again with the peer's Min-SE
	uacAck                           // ACK the 2xx: the call is answered
	uacAckBye                        // ACK the 2xx that crossed our CANCEL, then BYE
	uacCancel                        // send CANCEL, keep waiting for the final response
	uacFail                          // report the failure
)

// uacNext is the state machine: the state and the action an input leads
// to from a state.
func uacNext(s uacState, in uacInput) (uacState, uacAction) {
	switch s {
	case uacCalling, uacProceeding:
		switch in {
		case uacProvisional:
			return uacProceeding, uacReport
		case uacSuccess:
			return uacConfirmed, uacAck
		case uacChallenge:
			return uacCalling, uacAuthenticate
		case uacTooShort:
			return uacCalling, uacLengthen
		case uacFailure, uacBroken:
			return uacTerminated, uacFail
		case uacGiveUp:
			return uacCancelling, uacCancel
		}
	case uacCancelling:
		switch in {
		case uacProvisional:
			return uacCancelling, uacReport
		case uacSuccess:
			// RFC 3261 section 9.1: a 2xx can cross the CANCEL; the call
			// is up though the caller gave up, so it is ACKed and ended.
			return uacTerminated, uacAckBye
		case uacChallenge, uacTooShort, uacFailure, uacBroken:
			return uacTerminated, uacFail
		}
	}
	return s, uacNone
}

// uacHooks tell a user of the inviteClient what happens; each may be nil.
// They run on the goroutine that called run.
type uacHooks struct {
	sending     func(invite *sip.Request) // each INVITE, before it leaves
	provisional func(res *sip.Response)   // each provisional response but 100
	challenged  func(res *sip.Response)   // a digest challenge about to be answered
	cancelling  func()                    // CANCEL about to be sent
	answered    func(res *sip.Response)   // the 2xx, once ACKed
}

// inviteClient sends one INVITE in dlg and follows it (run). Its dialog
// is confirmed, and ack set, once run returned without error.
type inviteClient struct {
	client *sipgo.Client
	dlg    *dialog
	offer  []byte
	// codecs are the codecs offered: the answer must choose among them.
	codecs []Codec
	// crypto is the SDES of the offer (nil: plain RTP): the answer's
	// key and suite go into the media it returns.
	crypto *offerCrypto
	// headers go in every INVITE, besides Content-Type.
	headers []sip.Header
	// user and password answer one 401/407 challenge when user is set
	// (SHA-256 preferred over MD5).
	user, password string
	// requestTimeout bounds the BYE of a call ended as soon as it is up.
	requestTimeout time.Duration
	// sessionExpires and minSE ask for a session timer (RFC 4028) when
	// set; a 422 raises them to the peer's Min-SE, once.
	sessionExpires, minSE time.Duration
	on                    uacHooks

	state uacState // the run goroutine's

	mu  sync.Mutex
	ack *sip.Request // the ACK of the 2xx, re-sent for its retransmissions
}

// run sends the INVITE and follows it to its end: it returns the media
// of the SDP answer once the 2xx is ACKed, else a *DialError. When ctx
// ends before a final response, CANCEL goes out and the DialError's Err
// is ctx's cause.
func (u *inviteClient) run(ctx context.Context) (MediaParams, error) {
	headers := append([]sip.Header{sip.NewHeader("Content-Type", "application/sdp")}, u.headers...)
	authTried, lengthened := false, false
	for {
		hs := headers
		if u.sessionExpires > 0 {
			hs = append(slices.Clip(headers), placedTimerHeaders(u.sessionExpires, u.minSE)...)
		}
		invite := u.dlg.newRequest(sip.INVITE, u.offer, hs...)
		if u.on.sending != nil {
			u.on.sending(invite) // before it leaves: the answer may come before TransactionRequest returns
		}
		u.state = uacCalling
		tx, err := u.client.TransactionRequest(ctx, invite, sipgo.ClientRequestAddVia)
		if err != nil {
			u.state = uacTerminated
			return MediaParams{}, &DialError{Err: err}
		}
		res, in, err := u.follow(ctx, tx, invite, authTried, lengthened)
		tx.Terminate()
		cancelled := u.state == uacCancelling
		var act uacAction
		u.state, act = uacNext(u.state, in)
		switch act {
		case uacAuthenticate:
			authTried = true
			h, err := authorization(res, invite, u.user, u.password)
			if err != nil {
				u.state = uacTerminated
				return MediaParams{}, &DialError{Status: res.StatusCode, Reason: res.Reason, Err: err}
			}
			if u.on.challenged != nil {
				u.on.challenged(res)
			}
			headers = append(headers, h)
			continue
		case uacLengthen:
			// RFC 4028 section 7.4: again, asking for at least its Min-SE.
			lengthened = true
			min := minSEOf(res)
			u.sessionExpires, u.minSE = max(u.sessionExpires, min), max(u.minSE, min)
			continue
		case uacAck:
			return u.confirm(invite, res)
		case uacAckBye:
			if _, err := u.confirm(invite, res); err == nil {
				u.bye("canceled")
			}
			return MediaParams{}, &DialError{Status: res.StatusCode, Reason: res.Reason, Err: context.Cause(ctx)}
		}
		// uacFail
		switch {
		case err != nil:
			return MediaParams{}, &DialError{Err: errors.Join(context.Cause(ctx), err)}
		case cancelled:
			return MediaParams{}, &DialError{Status: res.StatusCode, Reason: res.Reason, Err: context.Cause(ctx)}
		}
		return MediaParams{}, &DialError{Status: res.StatusCode, Reason: res.Reason}
	}
}

// follow feeds the transaction's responses to the state machine until a
// final one (or a failure), and returns it with the input it was. A ctx
// done first sends CANCEL (once) and keeps waiting for the final response
// (the 487, or a 2xx that crossed the CANCEL), at most 64×T1 (RFC 3261
// section 9.1).
func (u *inviteClient) follow(ctx context.Context, tx sip.ClientTransaction, invite *sip.Request, authTried, lengthened bool) (*sip.Response, uacInput, error) {
	done := ctx.Done()
	var giveUp <-chan time.Time
	for {
		select {
		case res := <-tx.Responses():
			if res.IsProvisional() {
				if res.StatusCode == 100 {
					continue
				}
				var act uacAction
				u.state, act = uacNext(u.state, uacProvisional)
				if act == uacReport && u.on.provisional != nil {
					u.on.provisional(res)
				}
				continue
			}
			switch {
			case res.IsSuccess():
				return res, uacSuccess, nil
			case (res.StatusCode == 401 || res.StatusCode == 407) && !authTried && u.user != "":
				return res, uacChallenge, nil
			case res.StatusCode == 422 && !lengthened && u.sessionExpires > 0 && minSEOf(res) > 0:
				return res, uacTooShort, nil
			}
			return res, uacFailure, nil
		case <-tx.Done():
			if err := tx.Err(); err != nil {
				return nil, uacBroken, fmt.Errorf("invite: %w", err)
			}
			return nil, uacBroken, errors.New("invite: transaction ended without final response")
		case <-giveUp:
			return nil, uacBroken, errors.New("invite: no final response after CANCEL")
		case <-done:
			// RFC 3261 section 9.1 would wait for a provisional response
			// before the CANCEL; a peer that never answers would then hold
			// the call for Timer B (32 s) past its ring timeout, so the
			// CANCEL goes at once, as it always did here.
			done = nil
			var act uacAction
			u.state, act = uacNext(u.state, uacGiveUp)
			if act != uacCancel {
				continue
			}
			giveUp = time.After(64 * sip.T1)
			if u.on.cancelling != nil {
				u.on.cancelling()
			}
			cctx, stop := context.WithTimeout(context.Background(), cancelTimeout)
			cancel := newCancel(invite)
			for _, h := range cancelHeaders(ctx) {
				cancel.AppendHeader(h)
			}
			_, err := u.client.Do(cctx, cancel, func(*sipgo.Client, *sip.Request) error { return nil })
			stop()
			if err != nil {
				return nil, uacBroken, fmt.Errorf("cancel: %w", err)
			}
		}
	}
}

// confirm makes the dialog from the 2xx (RFC 3261 section 12.1.2): the
// callee's tag, its Contact as the remote target, the Record-Route in
// reverse as the route set; then ACKs it and reads the SDP answer. An
// answer without a usable stream ends the call with BYE.
func (u *inviteClient) confirm(invite *sip.Request, res *sip.Response) (MediaParams, error) {
	fail := func(err error) (MediaParams, error) {
		return MediaParams{}, &DialError{Status: res.StatusCode, Reason: res.Reason, Err: err}
	}
	tag, _ := res.To().Params.Get("tag")
	routes := recordRoute(res.GetHeaders("Record-Route"))
	slices.Reverse(routes)
	u.dlg.mu.Lock()
	u.dlg.remoteTag = tag
	u.dlg.routeSet = routes
	u.dlg.cseq-- // the ACK of a 2xx has the INVITE's CSeq
	u.dlg.mu.Unlock()
	u.dlg.setTarget(res.Contact())
	ack := u.dlg.newRequest(sip.ACK, nil)
	ack.CSeq().SeqNo = invite.CSeq().SeqNo
	u.mu.Lock()
	u.ack = ack
	u.mu.Unlock()
	if err := u.client.WriteRequest(ack, sipgo.ClientRequestAddVia); err != nil {
		return fail(fmt.Errorf("ack: %w", err))
	}
	if u.on.answered != nil {
		u.on.answered(res)
	}
	params, err := answerMatch(res.Body(), u.codecs)
	if err == nil && u.crypto != nil {
		params.SRTP, err = u.crypto.answered(res.Body())
	}
	if err != nil {
		u.bye("no usable SDP answer")
		return fail(fmt.Errorf("%w: %w", ErrNoAnswer, err))
	}
	return params, nil
}

// reack re-sends the ACK of our 2xx when the 2xx comes again (our ACK was
// lost): RFC 3261 section 13.2.2.4. Before the 2xx it does nothing.
func (u *inviteClient) reack() {
	u.mu.Lock()
	ack := u.ack
	u.mu.Unlock()
	if ack != nil {
		_ = u.client.WriteRequest(ack.Clone(), func(*sipgo.Client, *sip.Request) error { return nil })
	}
}

// bye ends a dialog that is up although the call is not going on (an
// answer that crossed our CANCEL, an answer without usable SDP).
func (u *inviteClient) bye(text string) {
	ctx, cancel := context.WithTimeout(context.Background(), u.requestTimeout)
	defer cancel()
	_, _ = u.dlg.do(ctx, u.dlg.newRequest(sip.BYE, nil, reasonHeader("SIP", 200, text)))
}

// recordRoute reads the URIs of Record-Route headers in order (sipgo's
// parser gives each value of a comma-separated list its own header; a
// header built otherwise may still hold several, RFC 3261 section 20.30:
// `<sip:p1.example.com;lr>, <sip:p2.example.com;lr>`); header parameters
// after the angle brackets are dropped. The UAS side uses them as they
// are (section 12.1.1), the UAC side in reverse (12.1.2).
func recordRoute(headers []sip.Header) []sip.Uri {
	var routes []sip.Uri
	for _, h := range headers {
		for _, part := range strings.Split(h.Value(), ",") {
			part = strings.TrimSpace(part)
			if i := strings.IndexByte(part, '<'); i >= 0 {
				part = part[i+1:]
				if j := strings.IndexByte(part, '>'); j >= 0 {
					part = part[:j]
				}
			}
			var u sip.Uri
			if err := sip.ParseUri(part, &u); err == nil {
				routes = append(routes, u)
			}
		}
	}
	return routes
}

// authorization answers a digest challenge (SHA-256 preferred over MD5).
func authorization(res *sip.Response, req *sip.Request, user, password string) (sip.Header, error) {
	name, credName := "WWW-Authenticate", "Authorization"
	if res.StatusCode == 407 {
		name, credName = "Proxy-Authenticate", "Proxy-Authorization"
	}
	var best *digest.Challenge
	for _, h := range res.GetHeaders(name) {
		ch, err := digest.ParseChallenge(h.Value())
		if err != nil || !digest.CanDigest(ch) {
			continue
		}
		alg := strings.ToUpper(ch.Algorithm)
		if alg != "MD5" && alg != "SHA-256" && alg != "" {
			continue
		}
		if best == nil || alg == "SHA-256" {
			best = ch
		}
	}
	if best == nil {
		return nil, fmt.Errorf("no usable digest challenge in %d", res.StatusCode)
	}
	cred, err := digest.Digest(best, digest.Options{Method: string(req.Method), URI: req.Recipient.String(), Username: user, Password: password})
	if err != nil {
		return nil, fmt.Errorf("digest: %w", err)
	}
	return sip.NewHeader(credName, cred.String()), nil
}

// newCancel builds the CANCEL of invite (RFC 3261 section 9.1): the same
// Request-URI, top Via, From, To, Call-ID and Route, CSeq number.
func newCancel(invite *sip.Request) *sip.Request {
	cancel := sip.NewRequest(sip.CANCEL, invite.Recipient)
	cancel.AppendHeader(sip.HeaderClone(invite.Via()))
	for _, n := range []string{"From", "To", "Call-ID", "Route", "Max-Forwards"} {
		for _, h := range invite.GetHeaders(n) {
			cancel.AppendHeader(sip.HeaderClone(h))
		}
	}
	cancel.AppendHeader(&sip.CSeqHeader{SeqNo: invite.CSeq().SeqNo, MethodName: sip.CANCEL})
	cancel.SetBody(nil)
	cancel.SetTransport(invite.Transport())
	cancel.SetDestination(invite.Destination())
	cancel.Laddr = invite.Laddr
	return cancel
}
