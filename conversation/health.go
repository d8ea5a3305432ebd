package conversation

import (
	"context"
	"encoding/json"
	"slices"
	"time"

	"switchboard/call"
	"switchboard/realtime"
	"switchboard/webhook"
)

// EventCallMediaHealth is the appliance's event that gives a controller
// the call's media health every HealthInterval, and at once when a
// threshold is crossed:
//
//	switchboard.call.media_health {"type":…, "event_id":…, "call_id":…, "health":{…the record's media health…}, "crossed":["one_way_audio"]}
const EventCallMediaHealth = "switchboard.call.media_health"

// DefaultHealthInterval is how often a controller gets the call's media
// health.
const DefaultHealthInterval = 5 * time.Second

// degradedRepeat is the least time between two media_degraded webhooks
// of one reason on one call: a condition that flaps around its threshold
// is announced again at most this often.
const degradedRepeat = time.Minute

// healthPoll is how often the watcher looks for crossed thresholds (the
// call's own monitor computes them every second).
const healthPoll = time.Second

// watchHealth sends the media health to the controller every
// HealthInterval, and on each threshold crossed, at once, the event and a
// realtime.call.media_degraded webhook. It returns when ctx ends.
func (cc *Controlled) watchHealth(ctx context.Context) {
	t := time.NewTicker(healthPoll)
	defer t.Stop()
	var prev []string
	sent := map[string]time.Time{}
	next := time.Now().Add(cc.opts.HealthInterval)
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-t.C:
			mh := cc.phone.MediaHealth()
			var crossed []string
			for _, r := range mh.Degraded {
				if !slices.Contains(prev, r) {
					crossed = append(crossed, r)
				}
			}
			prev = mh.Degraded
			for _, r := range crossed {
				if last, ok := sent[r]; ok && now.Sub(last) < degradedRepeat {
					continue
				}
				sent[r] = now
				cc.lifecycle(webhook.NewEvent(webhook.TypeCallMediaDegraded, now, webhook.CallMediaDegraded{
					CallID: cc.phone.ID(), PhoneNumberID: cc.phone.Route().NumberID, Reason: r, Health: mh}))
			}
			if len(crossed) > 0 || !now.Before(next) {
				next = now.Add(cc.opts.HealthInterval)
				cc.notify(cc.healthEvent(mh, crossed))
			}
		}
	}
}

// healthEvent builds a switchboard.call.media_health event.
func (cc *Controlled) healthEvent(mh call.MediaHealth, crossed []string) realtime.Event {
	var h map[string]any
	raw, _ := json.Marshal(mh)
	_ = json.Unmarshal(raw, &h)
	if crossed == nil {
		crossed = []string{}
	}
	return cc.custom(EventCallMediaHealth, map[string]any{"health": h, "crossed": crossed})
}
