// Package route holds what admission resolves for a call from its number
// (where it goes: an agent, a webhook, a bot's media stream, a direct session; its team; its
// settings), as one typed value that travels with the call from the SIP
// server's number lookup to the call and its conversation. It is plain
// data: both package sip, which carries it untouched, and package call,
// which reads it, import it.
package route

import "time"

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
	// Stream is set when the number routes to a bot's media stream (a
	// WebSocket in the Twilio Media Streams protocol, or AudioSocket); it
	// holds its secrets: never log it.
	Stream *StreamTarget
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

// StreamTarget is where a stream-routed call's audio goes: a bot's
// WebSocket (Twilio Media Streams) or AudioSocket TCP server.
type StreamTarget struct {
	// URL is the bot's address: ws:// or wss:// (twilio), tcp:// (audiosocket).
	URL string
	// Parameters are the customParameters of the start message.
	Parameters map[string]string
	// Track is "inbound" (the caller's audio) or "both" (also what the
	// caller hears).
	Track string
	// Protocol is "twilio" or "audiosocket".
	Protocol string
	// FallbackAgentID, when set, names the agent the call goes to when the
	// bot cannot be reached or closes its stream.
	FallbackAgentID string
	// AuthToken goes as a bearer header; SigningSecret signs the upgrade
	// request (Standard Webhooks). Never log them.
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

// String names the route for call records: "agent:<id>",
// "webhook:<id>", "stream" for a bot's media stream, or "session" for a
// direct session.
func (r Route) String() string {
	switch {
	case r.AgentID != "":
		return "agent:" + r.AgentID
	case r.WebhookID != "":
		return "webhook:" + r.WebhookID
	case r.Stream != nil:
		return "stream"
	case r.Session != nil:
		return "session"
	}
	return ""
}
