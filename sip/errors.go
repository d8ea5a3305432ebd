package sip

import "errors"

// ErrNumberNotFound is returned (wrapped) by Numbers.LookupNumber when no
// phone number is configured for the called number; the INVITE gets 404.
var ErrNumberNotFound = errors.New("sip: number not found")

// Causes reported by Call.Context and SoftphoneCall.Context through
// context.Cause when a dialog ends.
var (
	// ErrRemoteBye means the other side sent BYE.
	ErrRemoteBye = errors.New("sip: remote hung up")
	// ErrLocalHangup means Hangup was called.
	ErrLocalHangup = errors.New("sip: local hangup")
	// ErrCanceled means the caller sent CANCEL before the call was answered.
	ErrCanceled = errors.New("sip: call canceled by caller")
	// ErrAckTimeout means no ACK arrived for our 200 OK.
	ErrAckTimeout = errors.New("sip: no ACK for 200 OK")
	// ErrRejected means the call was rejected with a final non-2xx response.
	ErrRejected = errors.New("sip: call rejected")
	// ErrShutdown means the server stopped while the call was up.
	ErrShutdown = errors.New("sip: server shut down")
	// ErrNoAnswer means the caller of a delayed offer sent no usable SDP
	// answer (in its ACK or PRACK) to our offer.
	ErrNoAnswer = errors.New("sip: no sdp answer to our offer")
	// ErrInternal means the call's own code failed (a recovered panic).
	ErrInternal = errors.New("sip: internal error")
)

var (
	errNoCommonCodec  = errors.New("no common codec")
	errNoAudio        = errors.New("no usable audio stream")
	errBadSDP         = errors.New("malformed sdp")
	errBadNumber      = errors.New("not a phone number")
	errCallState      = errors.New("call is not in a state for this")
	errNoSDP          = errors.New("no sdp offer")
	errPrackPending   = errors.New("a reliable provisional response awaits its PRACK")
	errNoPrack        = errors.New("no PRACK for a reliable provisional response")
	errBadCredentials = errors.New("malformed credentials")
)
