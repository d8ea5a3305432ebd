package conversation

import (
	"context"
	"time"

	"switchboard/call"
	"switchboard/realtime"
	"switchboard/webhook"
)

// Appliance events of a call it placed, sent to its controller beside
// switchboard.call.state:
//
//	switchboard.call.progress  {"type":…, "event_id":…, "call_id":…, "status":"ringing"|"answered"|"busy"|"no-answer"|"failed"|"canceled"|"detected", "sip_status":180, "answered_by":"human"|"machine"|"unknown", "reason":…}
//	switchboard.call.opened    {"type":…, "event_id":…, "call_id":…, "answered_by":…, "beep":true, "reason":…}
const (
	EventCallProgress = "switchboard.call.progress"
	EventCallOpened   = "switchboard.call.opened"
)

// Progress does nothing for an agent: the call record has the dial.
func (b *bridge) Progress(call.Progress) {}

// Opened hands the opening of a placed call to Run.
func (b *bridge) Opened(o call.Opening) {
	select {
	case b.opened <- o:
	default:
	}
}

// speakFirst speaks first on a placed call (Run goroutine): the model is told
// who answered, then a person hears the agent's greeting (or the model's
// first words) and a machine gets a message from the model.
func (b *bridge) speakFirst(ctx context.Context, o call.Opening) {
	if text := openingNote(o); text != "" {
		b.send(ctx, &realtime.ConversationItemCreate{Item: realtime.Item{Type: realtime.ItemMessage, Role: realtime.RoleSystem,
			Content: []realtime.ContentPart{{Type: realtime.ContentInputText, Text: text}}}})
	}
	if o.AnsweredBy == call.AnsweredByMachine {
		b.send(ctx, &realtime.ResponseCreate{})
		return
	}
	if b.cfg.Settings.Greeting == "" {
		b.send(ctx, &realtime.ResponseCreate{})
		return
	}
	b.greet(ctx)
}

// openingNote is what the model is told of who answered a placed call
// ("" without machine detection).
func openingNote(o call.Opening) string {
	switch o.AnsweredBy {
	case call.AnsweredByHuman:
		return "(You placed this call and a person answered it. Speak first.)"
	case call.AnsweredByUnknown:
		return "(You placed this call. It is not known whether a person or an answering machine answered: the line was silent. Speak first.)"
	case call.AnsweredByMachine:
		if o.Beep {
			return "(You placed this call and it reached an answering machine: the beep has sounded and it is recording. " +
				"Leave a short message now, then end the call.)"
		}
		return "(You placed this call and it reached an answering machine: its greeting is over and it is recording. " +
			"Leave a short message now, then end the call.)"
	}
	return ""
}

// Progress reports a step of a placed call to the controller and the
// number's webhook.
func (cc *Controlled) Progress(p call.Progress) {
	d := map[string]any{"status": p.Status}
	if p.SIPStatus != 0 {
		d["sip_status"] = p.SIPStatus
	}
	reason := p.Reason
	if p.AnsweredBy != "" {
		d["answered_by"] = p.AnsweredBy
		reason = p.DetectReason
	}
	if reason != "" {
		d["reason"] = reason
	}
	cc.notify(cc.custom(EventCallProgress, d))
	cc.lifecycle(webhook.NewEvent(webhook.TypeCallProgress, time.Now(), webhook.CallProgress{CallID: cc.phone.ID(),
		PhoneNumberID: cc.phone.Route().NumberID, Direction: call.DirectionOutbound, Status: p.Status, SIPStatus: p.SIPStatus,
		Reason: reason, AnsweredBy: p.AnsweredBy}))
}

// Opened tells the controller and the model that the callee of a placed
// call is ready.
func (cc *Controlled) Opened(o call.Opening) {
	cc.notify(cc.custom(EventCallOpened, map[string]any{"answered_by": o.AnsweredBy, "beep": o.Beep, "reason": o.Reason}))
	cc.b.Opened(o)
}
