package webhook

import (
	"crypto/rand"
	"time"
)

// Event types the appliance delivers. The incoming-call type is the spec's;
// the lifecycle types are the appliance's own choice (the spec does not name
// them) and are sent only to webhooks that enable lifecycle events.
const (
	// TypeCallIncoming is POSTed when a call arrives on a webhook-routed
	// number, while the caller hears ringing. Data is CallIncoming.
	TypeCallIncoming = "realtime.call.incoming"
	// TypeCallEnded is POSTed once when a call ends, however it ended.
	// Data is CallEnded.
	TypeCallEnded = "realtime.call.ended"
	// TypeCallTransfer is POSTed when a transfer (SIP REFER) of the call
	// reaches a result. Data is CallTransfer.
	TypeCallTransfer = "realtime.call.transfer"
	// TypeCallMediaDegraded is POSTed when a running call crosses a media
	// health threshold (loss, no inbound audio, one-way audio). Data is
	// CallMediaDegraded.
	TypeCallMediaDegraded = "realtime.call.media_degraded"
	// TypeCallRecordingReady is POSTed when a call's recording is
	// finished and can be fetched. Data is CallRecordingReady.
	TypeCallRecordingReady = "realtime.call.recording_ready"
	// TypeCallProgress is POSTed at each step of a call the appliance
	// placed (POST /v1/calls): ringing, answered, busy, no-answer,
	// failed, canceled, and the answering-machine detection's verdict
	// (detected, with answered_by). Data is CallProgress.
	TypeCallProgress = "realtime.call.progress"
	// TypePhoneNumberRegistration is POSTed when the outbound
	// registration of a number that routes to a webhook changes state
	// (registered, failed, off; or fails with another status). Data is
	// registration.Event.
	TypePhoneNumberRegistration = "phone_number.registration"
)

// eventIDPrefix starts every event id.
const eventIDPrefix = "evt_"

// Event is the JSON envelope of every delivery:
//
//	{"id":"evt_…","object":"event","type":"realtime.call.incoming","created_at":1700000000,"data":{…}}
//
// Its ID is also the Standard Webhooks webhook-id, so a receiver can
// de-duplicate retried deliveries by either.
type Event struct {
	// ID is "evt_" followed by 26 random base32 characters (130 bits).
	ID string `json:"id"`
	// Object is always "event".
	Object string `json:"object"`
	// Type is one of the Type* constants.
	Type string `json:"type"`
	// CreatedAt is when the event happened, in Unix seconds.
	CreatedAt int64 `json:"created_at"`
	// Data is the type's payload (CallIncoming, CallEnded, CallTransfer)
	// and must marshal to a JSON object.
	Data any `json:"data"`
}

// NewEvent returns an event of the given type with a fresh random id,
// created at now.
func NewEvent(typ string, now time.Time, data any) Event {
	return Event{
		ID:        NewEventID(),
		Object:    "event",
		Type:      typ,
		CreatedAt: now.Unix(),
		Data:      data,
	}
}

// NewEventID returns "evt_" followed by 26 random base32 characters.
func NewEventID() string {
	return eventIDPrefix + rand.Text()
}

// SIPHeader is one header of the INVITE, as received (one entry per value;
// a header that appears twice, such as Diversion, gives two entries in
// order).
type SIPHeader struct {
	// Name is the header name in its canonical long form (e.g. "From",
	// "P-Asserted-Identity").
	Name string `json:"name"`
	// Value is the header value as it appeared on the wire.
	Value string `json:"value"`
}

// CallIncoming is the data of a realtime.call.incoming event.
type CallIncoming struct {
	// CallID is the appliance's call id (a UUID), the one that opens the
	// realtime session with /v1/realtime?call_id=.
	CallID string `json:"call_id"`
	// PhoneNumberID is the id of the number that matched the call.
	PhoneNumberID string `json:"phone_number_id"`
	// From is the caller (the From user part, E.164 when it parses as one).
	From string `json:"from"`
	// To is the called number.
	To string `json:"to"`
	// SIPHeaders are the INVITE's headers the call kept at admission
	// (sip.forward_headers), in the order they came. Never nil in the JSON
	// (an empty list is []).
	SIPHeaders []SIPHeader `json:"sip_headers"`
}

// NewCallIncoming returns a realtime.call.incoming event created at now.
func NewCallIncoming(now time.Time, data CallIncoming) Event {
	if data.SIPHeaders == nil {
		data.SIPHeaders = []SIPHeader{}
	}
	return NewEvent(TypeCallIncoming, now, data)
}

// Values of CallEnded.EndedBy.
const (
	// EndedByCaller: the remote party sent BYE or CANCEL.
	EndedByCaller = "caller"
	// EndedByCallee: the callee of a call the appliance placed hung up,
	// or refused it (busy, declined, not answered).
	EndedByCallee = "callee"
	// EndedByAgent: the model's end-call tool hung up.
	EndedByAgent = "agent"
	// EndedByController: a client called /v1/realtime/calls/{id}/hangup
	// or closed the controlling session.
	EndedByController = "controller"
	// EndedBySystem: the appliance hung up (timeout, error, shutdown,
	// transfer completed).
	EndedBySystem = "system"
)

// CallEnded is the data of a realtime.call.ended event.
type CallEnded struct {
	// CallID is the appliance's call id.
	CallID string `json:"call_id"`
	// PhoneNumberID is the id of the number the call came in on.
	PhoneNumberID string `json:"phone_number_id,omitempty"`
	// Reason is a short snake_case reason (e.g. "hangup", "transferred",
	// "no_answer", "error"), the same text as the BYE's Reason header when
	// the appliance hung up.
	Reason string `json:"reason"`
	// EndedBy is one of the EndedBy* values.
	EndedBy string `json:"ended_by"`
	// DurationMS is the time from answer (200 OK) to the end, in
	// milliseconds; 0 for a call that was never answered.
	DurationMS int64 `json:"duration_ms"`
}

// NewCallEnded returns a realtime.call.ended event created at now.
func NewCallEnded(now time.Time, data CallEnded) Event {
	return NewEvent(TypeCallEnded, now, data)
}

// Values of CallTransfer.Status.
const (
	// TransferAccepted: the peer accepted the REFER (202) but the final
	// result is not known yet.
	TransferAccepted = "accepted"
	// TransferCompleted: the transfer target answered (NOTIFY sipfrag 2xx).
	TransferCompleted = "completed"
	// TransferFailed: the REFER was refused or the target did not answer
	// (SIPStatus says how).
	TransferFailed = "failed"
)

// CallTransfer is the data of a realtime.call.transfer event.
type CallTransfer struct {
	// CallID is the appliance's call id.
	CallID string `json:"call_id"`
	// TransferID and Mode name a transfer of POST
	// /v1/calls/{call_id}/transfer or of an agent's target with a mode
	// (absent for a bare REFER).
	TransferID string `json:"transfer_id,omitempty"`
	Mode       string `json:"mode,omitempty"`
	// TargetURI is the Refer-To URI, or the human a transfer calls.
	TargetURI string `json:"target_uri"`
	// Status is one of the Transfer* values for a bare REFER; a
	// transfer's step otherwise (package transfer: dialing, ringing,
	// answered, briefing, bridged, referred, declined, no_answer, busy,
	// voicemail, failed, caller_left).
	Status string `json:"status"`
	// Reason says more about a step (why a transfer ended).
	Reason string `json:"reason,omitempty"`
	// SIPStatus is the SIP status code behind Status: the REFER's final
	// response, or the status line of the last NOTIFY sipfrag. 0 when no
	// SIP response was received (timeout).
	SIPStatus int `json:"sip_status"`
}

// NewCallTransfer returns a realtime.call.transfer event created at now.
func NewCallTransfer(now time.Time, data CallTransfer) Event {
	return NewEvent(TypeCallTransfer, now, data)
}

// CallMediaDegraded is the data of a realtime.call.media_degraded event.
type CallMediaDegraded struct {
	CallID        string `json:"call_id"`
	PhoneNumberID string `json:"phone_number_id,omitempty"`
	// Reason is the threshold crossed: packet_loss, no_inbound_audio or
	// one_way_audio.
	Reason string `json:"reason"`
	// Health is the call's media health at that moment (the figures of
	// the call record's media object).
	Health any `json:"health"`
}

// CallRecordingReady is the data of a realtime.call.recording_ready event.
type CallRecordingReady struct {
	CallID        string `json:"call_id"`
	PhoneNumberID string `json:"phone_number_id,omitempty"`
	// URL is the path of the recording on the appliance's API
	// (/v1/calls/{id}/recording), fetched with an API key.
	URL         string `json:"url"`
	ContentType string `json:"content_type"`
	DurationMS  int64  `json:"duration_ms"`
	Bytes       int64  `json:"bytes"`
	Encrypted   bool   `json:"encrypted"`
}

// CallProgress is the data of a realtime.call.progress event.
type CallProgress struct {
	CallID        string `json:"call_id"`
	PhoneNumberID string `json:"phone_number_id,omitempty"`
	// Direction is always "outbound".
	Direction string `json:"direction"`
	// Status is ringing, answered, busy, no-answer, failed, canceled or
	// detected (the machine detection's verdict).
	Status string `json:"status"`
	// SIPStatus is the INVITE's final status (0: none, or none yet).
	SIPStatus int `json:"sip_status,omitempty"`
	// Reason says more (the SIP reason phrase, or the detector's reason).
	Reason string `json:"reason,omitempty"`
	// AnsweredBy is human, machine or unknown (status detected only).
	AnsweredBy string `json:"answered_by,omitempty"`
}
