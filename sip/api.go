package sip

import (
	"context"
	"net/netip"

	"switchboard/route"
)

// Route is what the application knows about a called number.
type Route struct {
	// NumberID is the phone-number record id.
	NumberID string
	// PhoneNumber is the number in E.164.
	PhoneNumber string
	// AllowedAddresses restricts the callers' source addresses when not
	// empty; an INVITE from outside gets 403.
	AllowedAddresses []netip.Prefix
	// AuthUsername and AuthPassword enable digest authentication when
	// AuthUsername is set. The password is plaintext (already decrypted);
	// this package never logs it.
	AuthUsername, AuthPassword string
	// SRTP is the number's SRTP policy; empty follows Options.SRTP.
	SRTP SRTPPolicy
	// Codecs is the number's codec preference, best first (names from
	// CodecNames); empty: the best codec both sides have (Opus, then
	// G.722, then G.711 in the caller's order).
	Codecs []string
	// Call is where the number sends its calls (the application's route:
	// agent, webhook, team, settings), carried with the call so nothing
	// reads the number again; this package never reads it.
	Call *route.Route
}

// Numbers looks up the route of a called number. It returns an error
// wrapping ErrNumberNotFound when the number is not configured.
type Numbers interface {
	LookupNumber(ctx context.Context, e164 string) (*Route, error)
}

// Handler takes admitted calls. HandleCall runs in the goroutine that read
// the INVITE, after max_calls, number match, source address, digest and
// SDP negotiation passed and 100 Trying was sent. It owns the call: it
// rings, answers or rejects it, and hangs up. If HandleCall returns before
// the call got a final response, the call is rejected with 480. ctx is the
// call's context (the same as call.Context()).
type Handler interface {
	HandleCall(ctx context.Context, call *Call)
}

// HandlerFunc adapts a function to Handler.
type HandlerFunc func(ctx context.Context, call *Call)

// HandleCall calls f.
func (f HandlerFunc) HandleCall(ctx context.Context, call *Call) { f(ctx, call) }

// Metrics receives one event per INVITE outcome. result is one of the
// Result* constants. Implementations must be safe for concurrent use.
type Metrics interface {
	InviteResult(result string)
}

// INVITE outcomes reported to Metrics.
const (
	ResultAccepted    = "accepted"     // handed to the Handler
	ResultNotFound    = "not_found"    // 404
	ResultForbidden   = "forbidden"    // 403 source address not allowed
	ResultChallenged  = "challenged"   // 401/407 sent
	ResultAuthFailed  = "auth_failed"  // wrong credentials (then challenged again)
	ResultRateLimited = "rate_limited" // 403 after digest failures, or unanswered: source blocked
	ResultNoCodec     = "no_codec"     // 488
	ResultOverloaded  = "overloaded"   // 503 max_calls
	ResultDraining    = "draining"     // 503 shutting down
	ResultBadRequest  = "bad_request"  // 400
	// ResultIntervalTooSmall is a 422: the session timer asked for is
	// below sip.min_se (the caller retries with ours).
	ResultIntervalTooSmall = "interval_too_small"
	ResultError            = "error" // 500 lookup failed
)

type noMetrics struct{}

func (noMetrics) InviteResult(string) {}

// Info is a SIP INFO request received inside a call (e.g. DTMF as
// application/dtmf-relay).
type Info struct {
	ContentType string
	Body        []byte
}

// Header is one SIP header name/value pair.
type Header struct {
	Name, Value string
}
