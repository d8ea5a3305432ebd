package call

import (
	"context"
	"fmt"
	"time"

	"switchboard/dtmf"
	"switchboard/media"
	"switchboard/route"
)

// Leg is one party of a call: the caller reached over SIP and RTP
// (package sipleg), a browser over WebRTC (package rtc), a callee the
// appliance placed, a leg held by another node. A Call drives its first
// leg in this order: Ring, Start, Answer (or Reject at any point before
// it), then Hangup or the party's own end (Context done), and Close once;
// a leg joined to a live call (Call.Join) starts answered. Every method is
// safe from any goroutine unless its comment says otherwise.
//
// A leg knows nothing of where its audio goes: the call routes it. Its
// Audio hands the party's voice to listeners in the format each asks for
// and takes what the party hears through writers, converted inside
// package media (two G.711 legs of one law relay code words). Capabilities
// a leg may lack (SendDTMF without telephone-event or tones, Transfer on
// a browser) answer ErrNotSupported.
type Leg interface {
	// ID is the leg's id: the call id (a UUID) for the call's first leg.
	ID() string
	// Info describes the party and the route admission resolved.
	Info() LegInfo
	// Context ends when the leg is gone: the party hung up or cancelled,
	// or Hangup or Close ran; its cause says why.
	Context() context.Context

	// Start readies the media and begins handing keys and events to
	// sink; Audio is valid from then on. Nothing is sent to the party
	// before Answer, but audio queued before it goes out first.
	Start(sink LegSink, opts LegOptions) error
	// Audio is the leg's media, valid after Start.
	Audio() Audio
	// Ring tells the caller the call is being presented (180 Ringing).
	Ring() error
	// Answer accepts the call (200 OK and its ACK) and starts the media;
	// for a leg the appliance places, it dials and returns once the
	// callee answered, or a *DialError.
	Answer(ctx context.Context) error
	// Reject refuses the call before it was answered; retryAfter > 0 asks
	// the caller to try again then.
	Reject(status int, reason string, retryAfter time.Duration) error
	// Hangup ends an answered call from the appliance's side (BYE with
	// reason); headers go with it (a Reason among them replaces the
	// appliance's), where the leg's signalling has headers.
	Hangup(ctx context.Context, reason string, headers ...Header) error
	// Transfer asks the party's side to call target instead (REFER) and
	// waits for the outcome; progress, when set, gets each status the far
	// end reports (the first one is the acceptance). headers go with the
	// REFER.
	Transfer(ctx context.Context, target string, progress func(status int), headers ...Header) error
	// SendDTMF plays digits to the party and returns once they are sent.
	SendDTMF(ctx context.Context, digits string) error
	// Hold stops (on) or resumes sending audio to the party.
	Hold(on bool)
	// Stats are the leg's media figures so far.
	Stats() media.StatsSnapshot
	// Close releases the leg's media; it is idempotent.
	Close() error
}

// Audio is a leg's media as the call routes it; a *media.Session is one.
// The listeners' sinks run on the leg's media goroutine, once per frame.
type Audio interface {
	// Format is the leg's own audio: G.711 for a G.711 leg (what relays
	// to another leg of the same law untouched), PCM16 at the decoded
	// rate otherwise.
	Format() media.Format
	// Listen hands the party's voice to sink in format f.
	Listen(f media.Format, sink func(b []byte)) (*media.Listener, error)
	// ListenPCM hands the party's voice to sink as samples at rate.
	ListenPCM(rate int, sink func(pcm []int16)) (*media.Listener, error)
	// Writer takes what the party hears, in format f.
	Writer(f media.Format, o media.WriterOptions) (*media.Writer, error)
	// Playout is the queue of what the party hears (Flush, Len,
	// SetFiller).
	Playout() *media.Playout
}

// LegInfo describes a leg for call records, webhooks and the API.
type LegInfo struct {
	// Kind names the leg's transport: "sip" or "webrtc" (the call
	// record's channel).
	Kind string
	// From and To are the caller and the called party as the leg saw them.
	From, To string
	// CallerName is the caller's display name ("" when it has none).
	CallerName string
	// RemoteID is the transport's own id of the call (the SIP Call-ID).
	RemoteID string
	// Received is when the call reached the appliance.
	Received time.Time
	// Headers are the transport's headers a webhook may carry (SIP
	// headers for a SIP leg).
	Headers []Header
	// Route is what admission resolved from the called number (for a
	// call the appliance places, the calling number's).
	Route Route
	// Direction is DirectionOutbound for a call the appliance placed;
	// "" or DirectionInbound for one it answered.
	Direction string
	// MachineDetection is a placed call's answering-machine detection.
	MachineDetection MachineDetection
	// Rate is the sample rate of the party's own audio (its Audio's
	// Format: 8000 for G.711, 16000 for G.722, the rate asked of Opus):
	// how much of the conversation's audio is the caller's (a G.711
	// caller's 24 kHz PCM16 carries 8 kHz). The call fills it once the
	// leg's media started (0 before).
	Rate int
}

// Header is one name/value pair of a leg's signalling.
type Header struct{ Name, Value string }

// LegOptions shape the media a leg delivers.
type LegOptions struct {
	// Rate is the PCM rate the leg's main consumer takes (the
	// conversation's): a leg whose codec decodes at several rates (Opus)
	// decodes at this one, so nothing is resampled between them.
	Rate int
	// Inband says when tones in the party's audio count as keys.
	Inband Inband
	// Tap observes every frame the leg delivers and sends, on its media
	// goroutine (the call's health and recording), as 8 kHz audio; a leg
	// never blocks on it.
	Tap media.Tap
}

// LegSink takes what a leg reports besides its audio.
type LegSink interface {
	// Key is a key the party pressed (any source: RFC 4733, SIP INFO,
	// in-band tones).
	Key(ev dtmf.Event)
	// Lost says the leg's media stopped (no RTP for the media timeout):
	// the call hangs up with reason.
	Lost(reason string)
	// PeerHold says the party's side put the call on hold and sends no
	// audio (on), or resumed: its silence is then no sign of a broken
	// path (media health).
	PeerHold(on bool)
	// PeerHolding says the party's phone put the call on hold (RFC 3264:
	// a=sendonly or inactive, or the older c=0.0.0.0): it wants nothing
	// sent to it (on), or took the call off hold. Whoever hears the party
	// then hears hold audio instead (Party.OnPeerHold).
	PeerHolding(on bool)
	// Ringing says the callee of a call the appliance placed is being
	// alerted (a 180 or 183 to its INVITE); it may come more than once.
	Ringing()
}

// DialError is how a leg the appliance placed reports a dial that did not
// end in an answer: its outcome (ProgressBusy, ProgressNoAnswer,
// ProgressCanceled, ProgressFailed), the final SIP status if there was
// one, and who ended it.
type DialError struct {
	Progress  string
	SIPStatus int
	Reason    string
	// ByCallee says the callee's side ended the dial (a refusal), not
	// the appliance (a timeout, a cancel, a failure to send).
	ByCallee bool
	Err      error
}

func (e *DialError) Error() string {
	if e.SIPStatus != 0 {
		return fmt.Sprintf("dial: %s: %d %s", e.Progress, e.SIPStatus, e.Reason)
	}
	return "dial: " + e.Progress + ": " + e.Reason
}

func (e *DialError) Unwrap() error { return e.Err }

// Route is where admission sent a call (package route), carried with it
// from the number lookup on: nothing re-reads it.
type Route = route.Route

// WebhookTarget is where a webhook-routed call's events go.
type WebhookTarget = route.WebhookTarget

// StreamTarget is where a stream-routed call's audio goes (package route).
type StreamTarget = route.StreamTarget

// Inband says when the Goertzel detector listens to the caller's audio.
type Inband = route.Inband

// In-band detection modes.
const (
	InbandAuto = route.InbandAuto
	InbandOn   = route.InbandOn
	InbandOff  = route.InbandOff
)
