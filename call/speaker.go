package call

import (
	"time"

	"switchboard/media"
)

// The conversation's voice (Speaker): what it plays reaches every party
// that hears the conversation, through that party's writers (party.go),
// converted there once for the party's leg.

// Format is the conversation's audio format (a stream bounds a flooding bot's audio with it).
func (c *Call) Format() media.Format { return c.format }

// Play queues the conversation's audio (a stream bounds a flooding bot's audio with it).
func (c *Call) Play(itemID string, b []byte) {
	for _, p := range c.voiceParties() {
		p.voice.Write(itemID, b)
	}
}

// PlayPCM queues locally rendered PCM16LE at the conversation's rate
// (a stream bounds a flooding bot's audio with it).
func (c *Call) PlayPCM(itemID string, pcm []byte) {
	for _, p := range c.voiceParties() {
		p.voicePCM.Write(itemID, pcm)
	}
}

// Flush drops the conversation's queued audio (Speaker) and reports what
// the first party hearing it (the caller) heard of the item playing;
// cutting audio still queued for the caller is a barge-in.
func (c *Call) Flush() (string, int) {
	var item string
	var ms int
	for i, p := range c.voiceParties() {
		q := p.audio.Playout()
		if p == c.caller && q.Len() > 0 {
			c.health.bargeIn()
		}
		id, played := q.Flush()
		p.voice.Reset()
		p.voicePCM.Reset()
		if i == 0 {
			item, ms = id, played
		}
	}
	return item, ms
}

// Pending is the conversation's audio queued and not sent yet to the
// first party hearing it (a stream bounds a flooding bot's audio with it).
func (c *Call) Pending() time.Duration {
	if ps := c.voiceParties(); len(ps) > 0 {
		return ps[0].audio.Playout().Len()
	}
	return 0
}

// Trim drops the conversation's oldest queued audio beyond max for every
// party that hears it and reports what the first one lost: a stream
// bounds a flooding bot's audio with it.
func (c *Call) Trim(max time.Duration) time.Duration {
	var dropped time.Duration
	for i, p := range c.voiceParties() {
		d := p.audio.Playout().Trim(max)
		if i == 0 {
			dropped = d
		}
	}
	return dropped
}

// voiceParties are the parties that hear the conversation now.
func (c *Call) voiceParties() []*Party {
	if vs := c.routes.voice.Load(); vs != nil {
		return vs.parties
	}
	return nil
}
