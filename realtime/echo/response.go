package echo

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"switchboard/realtime"
)

func (s *session) responseCreate(v *realtime.ResponseCreate) {
	if s.resp != nil {
		s.fail(v, "conversation_already_has_active_response", "", "response %s is still in progress", s.resp.id)
		return
	}
	var src *item
	for i := len(s.items) - 1; i >= 0; i-- {
		it := s.items[i]
		if it.it.Type == realtime.ItemFunctionCallOutput {
			src = it // a tool's result: say it
			break
		}
		if it.it.Type != realtime.ItemMessage || it.it.Role == realtime.RoleAssistant {
			break
		}
		if it.it.Role == realtime.RoleUser || it.it.Role == realtime.RoleSystem {
			src = it // a system note (a placed call's opening, a failed transfer) is read out
			break
		}
	}
	s.startResponse(v.Response, src)
}

// speak synthesizes text in the session's voice and output format,
// falling back to a tone.
func (s *session) speak(text string) []byte {
	ctx, cancel := context.WithTimeout(s.ctx, s.e.opts.SynthTimeout)
	defer cancel()
	voice := s.cfg.Audio.Output.Voice.String()
	pcm, err := s.e.opts.Synthesizer.Synthesize(ctx, text, voice, s.out.rate)
	if err != nil {
		s.log.Warn().Err(err).Str("voice", voice).Msg("echo: synthesis failed, using a tone")
		pcm, _ = Tone{}.Synthesize(ctx, text, voice, s.out.rate)
	}
	return s.out.encode(nil, pcm)
}

func (s *session) textOnly(p *realtime.ResponseParams) bool {
	mods := s.cfg.OutputModalities
	if p != nil && p.OutputModalities != nil {
		mods = p.OutputModalities
	}
	return slices.Equal(mods, []string{"text"})
}

// startResponse begins a response answering src (nil: the instructions or a
// stock sentence).
func (s *session) startResponse(p *realtime.ResponseParams, src *item) {
	if s.resp != nil {
		return // a VAD turn while a response plays and interrupt_response is off
	}
	r := &response{id: s.id("resp"), itemID: s.id("item"), prevItemID: s.lastID(), text: s.textOnly(p), started: time.Now()}
	text := ""
	switch {
	case src != nil && src.audio != nil:
		r.transcript = fmt.Sprintf("(echo) you spoke for %.1f seconds", float64(src.spokeMs)/1000)
		if !r.text {
			// Read from the user item itself, converted chunk by chunk.
			r.audio, r.audioFm = src.audio, src.audioFm
		}
	case src != nil && src.it.Type == realtime.ItemFunctionCallOutput:
		text = src.it.Output
	case src != nil:
		for _, c := range src.it.Content {
			if c.Text != "" {
				text += c.Text
			} else if c.Transcript != "" {
				text += c.Transcript
			}
		}
	case p != nil && p.Instructions != "":
		text = p.Instructions
	}
	if name, args, ok := s.toolCall(text); ok && src != nil && src.it.Type == realtime.ItemMessage {
		s.functionCall(name, args)
		return
	}
	if r.transcript == "" {
		if text == "" {
			text = "I have nothing to repeat yet."
		}
		r.transcript = text
		if !r.text {
			r.audio, r.audioFm = s.speak(text), s.out
		}
	}
	if !r.text && r.audioFm != s.out {
		if s.outConv == nil || s.outConv.from != r.audioFm || s.outConv.to != s.out {
			s.outConv = newConverter(r.audioFm, s.out)
		}
		s.outConv.reset()
	}
	s.resp = r
	mods := []string{"audio"}
	partType, contentType := realtime.ContentAudio, realtime.ContentOutputAudio
	if r.text {
		mods, partType, contentType = []string{"text"}, realtime.ContentText, realtime.ContentOutputText
	}
	it := realtime.Item{ID: r.itemID, Object: "realtime.item", Type: realtime.ItemMessage, Status: realtime.StatusInProgress, Role: realtime.RoleAssistant, Content: []realtime.ContentPart{}}
	ni := &item{it: it, said: !r.text, voiced: !r.text}
	part := realtime.ContentPart{Type: contentType, Transcript: r.transcript}
	if r.text {
		part = realtime.ContentPart{Type: contentType, Text: r.transcript} // an output_text part holds text
	}
	ni.it.Content = []realtime.ContentPart{part}
	s.items = append(s.items, ni)
	s.forgetAudio()
	s.emit(&realtime.ResponseCreated{Response: s.reference(realtime.Response{ID: r.id, Object: "realtime.response", Status: realtime.StatusInProgress,
		Output: []realtime.Item{}, OutputModalities: mods, Audio: &realtime.AudioConfig{Output: &realtime.AudioOutput{Format: s.cfg.OutputFormat(), Voice: s.cfg.Audio.Output.Voice}}})})
	s.emit(&realtime.ResponseOutputItemAdded{ResponseID: r.id, Item: it})
	s.emit(&realtime.ConversationItemAdded{PreviousItemID: r.prevItemID, Item: it})
	s.emit(&realtime.ResponseContentPartAdded{ResponseID: r.id, ItemID: r.itemID, Part: realtime.ContentPart{Type: partType}})
	if r.text {
		s.emit(&realtime.ResponseOutputTextDelta{ResponseID: r.id, ItemID: r.itemID, Delta: r.transcript})
		s.finish(realtime.StatusCompleted, "")
		return
	}
	s.stream()
}

// stream sends every chunk that is due and arms the timer for the next.
func (s *session) stream() {
	r := s.resp
	if r == nil {
		return
	}
	o := s.e.opts
	size := max(r.audioFm.bytes(int(o.Chunk/time.Millisecond)), 1)
	for r.sent < len(r.audio) {
		due := r.started.Add(time.Duration(r.chunks)*o.Chunk - o.Lead)
		if wait := time.Until(due); !o.Unpaced && wait > 0 {
			s.timer.Reset(wait)
			return
		}
		end := min(r.sent+size, len(r.audio))
		chunk := r.audio[r.sent:end]
		var d *realtime.ResponseOutputAudioDelta
		if r.audioFm == s.out {
			d = &realtime.ResponseOutputAudioDelta{Delta: chunk}
		} else {
			// A pooled event: the receiver's Release gives its memory to
			// a later chunk (realtime.NewAudioDelta).
			d = realtime.NewAudioDelta()
			d.Delta = s.outConv.convert(d.Delta, chunk)
		}
		d.ResponseID, d.ItemID = r.id, r.itemID
		s.emit(d)
		if r.sent == 0 {
			s.emit(&realtime.ResponseOutputAudioTranscriptDelta{ResponseID: r.id, ItemID: r.itemID, Delta: r.transcript})
		}
		r.sent = end
		r.chunks++
		if i := s.find(r.itemID); i >= 0 {
			s.items[i].saidMs = r.audioFm.ms(r.sent)
		}
		if s.ctx.Err() != nil {
			return
		}
	}
	s.finish(realtime.StatusCompleted, "")
}

// finish ends the response in progress with status (completed or
// cancelled) and its done events.
func (s *session) finish(status, reason string) {
	r := s.resp
	if r == nil {
		return
	}
	s.resp = nil
	s.timer.Stop()
	itemStatus := realtime.StatusCompleted
	details := realtime.Null[realtime.StatusDetails]()
	if status != realtime.StatusCompleted {
		itemStatus = realtime.StatusIncomplete
		details = realtime.Some(realtime.StatusDetails{Type: status, Reason: reason})
	}
	var it realtime.Item
	if i := s.find(r.itemID); i >= 0 {
		s.items[i].it.Status = itemStatus
		it = s.items[i].it
	}
	if r.text {
		s.emit(&realtime.ResponseOutputTextDone{ResponseID: r.id, ItemID: r.itemID, Text: r.transcript})
		s.emit(&realtime.ResponseContentPartDone{ResponseID: r.id, ItemID: r.itemID, Part: realtime.ContentPart{Type: realtime.ContentText, Text: r.transcript}})
	} else {
		s.emit(&realtime.ResponseOutputAudioDone{ResponseID: r.id, ItemID: r.itemID})
		s.emit(&realtime.ResponseOutputAudioTranscriptDone{ResponseID: r.id, ItemID: r.itemID, Transcript: r.transcript})
		s.emit(&realtime.ResponseContentPartDone{ResponseID: r.id, ItemID: r.itemID, Part: realtime.ContentPart{Type: realtime.ContentAudio, Transcript: r.transcript}})
	}
	s.emit(&realtime.ResponseOutputItemDone{ResponseID: r.id, Item: it})
	s.emit(&realtime.ConversationItemDone{PreviousItemID: r.prevItemID, Item: it})
	mods := []string{"audio"}
	if r.text {
		mods = []string{"text"}
	}
	s.emit(&realtime.ResponseDone{Response: s.reference(realtime.Response{ID: r.id, Object: "realtime.response", Status: status, StatusDetails: details,
		Output: []realtime.Item{it}, OutputModalities: mods})})
	if status == realtime.StatusCompleted {
		s.armIdle(r)
	}
}

// reference completes a response with the members the reference always
// sends: its conversation, max_output_tokens, and the nullable
// status_details, usage and metadata as null when unset (the echo engine
// counts no tokens).
func (s *session) reference(r realtime.Response) realtime.Response {
	r.ConversationID = s.convID
	if r.MaxOutputTokens == nil {
		r.MaxOutputTokens = json.RawMessage(`"inf"`)
	}
	if !r.StatusDetails.Present {
		r.StatusDetails = realtime.Null[realtime.StatusDetails]()
	}
	if r.Usage == nil {
		r.Usage = json.RawMessage(`null`)
	}
	if r.Metadata == nil {
		r.Metadata = json.RawMessage(`null`)
	}
	return r
}
