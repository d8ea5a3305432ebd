// Package transfer hands a call's caller to a human the way contact
// centers do: a bridged transfer (the appliance places a second SIP leg
// and connects the caller and the human through itself, B2BUA), a warm
// transfer (the caller holds with music while the human is called and
// briefed, then accepts with a key or declines), a REFER (blind, or with
// Replaces to hand the caller to a consultation leg the appliance set up,
// RFC 3891 and RFC 5589 section 7), and auto (a REFER, bridged instead
// when the caller's side refuses it or never reports on it). It also
// owns hold audio: music synthesized at start, silence, a WAV file or a
// prompt rendered with the speech engine.
//
// The package works on a call's parties and routes (package call): it
// joins the human's leg to the call, routes who hears what
// (call.FromLoop for hold audio, call.FromParty for the bridge) and puts
// the caller back with the conversation when the transfer does not
// happen. Its dependencies arrive as small interfaces: a Dialer (places a
// SIP leg to a target, through the number's outbound trunk for a tel:
// target), a Voice (text to speech) and, for each transfer, a Reporter
// (progress to the controller, the webhook). The conversation that
// started a transfer acts on its Result: it closes (or keeps listening
// with) the model session once the caller is bridged, and tells the
// model why when the caller is back.
package transfer
