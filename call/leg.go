package call

import (
	"context"
	"time"

	"switchboard/dtmf"
	"switchboard/media"
)

// Leg is the phone side of a call: the caller's device reached over SIP
// and RTP (SIPLeg) today; a browser over WebRTC and a leg held by another
// node implement the same interface. A Call drives its leg in this order:
// Ring, Start, Answer (or Reject at any point before it), then Hangup or
// the caller's own end (Context done), and Close once. Every method is safe from any goroutine
// unless its comment says otherwise.
//
// The audio crosses a leg as PCM16 at Rate, or, when Start asked for a
// passthrough, as the leg's own G.711 bytes. Capabilities a leg may lack
// (SendDTMF on a leg without telephone-event or tones, Transfer on a
// browser) answer ErrNotSupported.
type Leg interface {
	// ID is the call id (a UUID) the leg was admitted with.
	ID() string
	// Info describes the caller and the route admission resolved.
	Info() LegInfo
	// Context ends when the leg is gone: the caller hung up or
	// cancelled, or Hangup or Close ran; its cause says why.
	Context() context.Context
	// Rate is the sample rate of the PCM given to LegSink.Audio and Play.
	Rate() int
	// Codec is the leg's G.711 codec on the wire, or "" when it has none
	// (no passthrough possible).
	Codec() string

	// Start readies the media and begins handing the caller's audio and
	// keys to sink. Nothing is sent to the caller before Answer, but audio
	// played before it is queued and goes out first.
	Start(sink LegSink, opts LegOptions) error
	// Ring tells the caller the call is being presented (180 Ringing).
	Ring() error
	// Answer accepts the call (200 OK and its ACK) and starts the media.
	Answer(ctx context.Context) error
	// Reject refuses the call before it was answered; retryAfter > 0 asks
	// the caller to try again then.
	Reject(status int, reason string, retryAfter time.Duration) error
	// Hangup ends an answered call from the appliance's side (BYE with
	// reason); headers go with it (a Reason among them replaces the
	// appliance's), where the leg's signalling has headers.
	Hangup(ctx context.Context, reason string, headers ...Header) error
	// Transfer asks the caller's side to call target instead (REFER) and
	// waits for the outcome; progress, when set, gets each status the far
	// end reports (the first one is the acceptance). headers go with the
	// REFER.
	Transfer(ctx context.Context, target string, progress func(status int), headers ...Header) error

	// Play queues PCM16 at Rate, tagged with an item id (barge-in tells
	// which item the caller heard).
	Play(itemID string, pcm []int16)
	// PlayCoded queues the leg's own codec bytes (passthrough).
	PlayCoded(itemID string, payload []byte)
	// Flush drops everything queued within one frame and reports which
	// item was playing and how many milliseconds of it the caller heard.
	Flush() (itemID string, playedMs int)
	// Pending is how much queued audio has not been sent yet.
	Pending() time.Duration
	// SendDTMF plays digits to the caller's side and returns once they
	// are sent.
	SendDTMF(ctx context.Context, digits string) error
	// Hold stops (on) or resumes sending audio to the caller.
	Hold(on bool)
	// Stats are the leg's media figures so far.
	Stats() media.StatsSnapshot
	// Close releases the leg's media; it is idempotent.
	Close() error
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
}

// Header is one name/value pair of a leg's signalling.
type Header struct{ Name, Value string }

// LegOptions shape the media a leg delivers.
type LegOptions struct {
	// Passthrough asks for the leg's codec bytes (LegSink.Coded and
	// PlayCoded) instead of PCM: the conversation speaks the same G.711 as
	// the caller, so audio is never decoded or encoded on the way.
	Passthrough bool
	// Inband says when tones in the caller's audio count as keys.
	Inband Inband
	// Tap observes every frame the leg delivers and sends, on its media
	// goroutine (the call's health and recording): a leg feeds it the
	// audio it already has, decoded or not, and never blocks on it.
	Tap media.Tap
}

// LegSink takes what a leg receives. Audio and Coded run on the leg's
// media goroutine once per frame and must not block or keep the slice.
type LegSink interface {
	// Audio is one frame of the caller's audio, PCM16 at the leg's Rate.
	Audio(pcm []int16)
	// Coded is one frame in the leg's codec (passthrough).
	Coded(payload []byte)
	// Key is a key the caller pressed (any source: RFC 4733, SIP INFO,
	// in-band tones).
	Key(ev dtmf.Event)
	// Lost says the leg's media stopped (no RTP for the media timeout):
	// the call hangs up with reason.
	Lost(reason string)
	// PeerHold says the caller's side put the call on hold and sends no
	// audio (on), or resumed: its silence is then no sign of a broken
	// path (media health).
	PeerHold(on bool)
	// Ringing says the callee of a call the appliance placed is being
	// alerted (a 180 or 183 to its INVITE); it may come more than once.
	Ringing()
}

// Route is where admission sent a call, resolved once from the called
// number and carried with the call: nothing re-reads it.
type Route struct {
	// NumberID and PhoneNumber name the number the call matched.
	NumberID, PhoneNumber string
	// TeamID owns the number (and so the call).
	TeamID string
	// AgentID is set when the number routes to an agent.
	AgentID string
	// WebhookID and Webhook are set when the number routes to a webhook;
	// Webhook holds its secrets: never log it.
	WebhookID string
	Webhook   *WebhookTarget
	// DTMFInband is the number's in-band DTMF setting ("" follows the
	// conversation's).
	DTMFInband Inband
	// Session, set for a direct session (a browser's own realtime
	// session: no agent, no webhook; the caller's event channel steers
	// it), is the session configuration it starts with: the JSON of a
	// realtime session object ("{}" for the defaults).
	Session []byte
	// Recording asks for the number's calls to be recorded.
	Recording bool
	// ContextURL, when set, is asked for an agent-routed call's context
	// while it rings (its variables, instructions, greeting, agent), for
	// at most ContextTimeout.
	ContextURL     string
	ContextTimeout time.Duration
	// Variables are the call's own variables ({{variables.NAME}}): those
	// of POST /v1/calls for a call the appliance places.
	Variables map[string]string
}

// WebhookTarget is where a webhook-routed call's events go.
type WebhookTarget struct {
	ID, URL, AuthURL string
	// AuthToken is a bearer or OAuth client credential; SigningSecret the
	// Standard Webhooks secret. Never log them.
	AuthToken, SigningSecret string
}

// Inband says when the Goertzel detector listens to the caller's audio.
type Inband string

// In-band detection modes.
const (
	// InbandAuto listens when the caller negotiated no telephone-event.
	InbandAuto Inband = "auto"
	// InbandOn always listens, also when telephone-event was negotiated
	// (gateways that send both; the keypad keeps one of each press).
	InbandOn Inband = "on"
	// InbandOff never listens.
	InbandOff Inband = "off"
)
