package realtimetest

import (
	"context"
	"math"
	"switchboard/media"
	"time"

	"switchboard/realtime"
)

// Response scripts one audio response.
type Response struct {
	// Audio is how much audio the response carries.
	Audio time.Duration
	// Chunk is the audio per output_audio.delta (default 100 ms).
	Chunk time.Duration
	// Paced sends one chunk per Chunk of wall time (real time); otherwise
	// as fast as possible.
	Paced bool
	// Transcript is sent in one transcript delta with the first chunk.
	Transcript string
	// DropAfter, when set, drops the TCP connection abruptly once that much
	// audio was sent, mid-response.
	DropAfter time.Duration
}

// Result says what StreamResponse sent.
type Result struct {
	// ResponseID and ItemID name the response and its assistant item.
	ResponseID, ItemID string
	// Sent is how much audio went out.
	Sent time.Duration
	// Cancelled is true when a response.cancel cut it short.
	Cancelled bool
	// Dropped is true when DropAfter cut the connection.
	Dropped bool
}

// Tone returns d of a 440 Hz tone in format (audio/pcm 24 kHz, or G.711).
func Tone(format string, d time.Duration, offset time.Duration) []byte {
	if format == realtime.FormatPCMU || format == realtime.FormatPCMA {
		b := make([]byte, int(d/time.Millisecond)*8)
		for i := range b {
			b[i] = 0x55 + byte(i%8)
		}
		return b
	}
	n := int(d / time.Millisecond * 24)
	start := int(offset / time.Millisecond * 24)
	pcm := make([]int16, n)
	for i := range pcm {
		pcm[i] = int16(8000 * math.Sin(2*math.Pi*440*float64(start+i)/24000))
	}
	return media.AppendPCM16LE(nil, pcm)
}

// StreamResponse sends a full audio response lifecycle: response.created,
// response.output_item.added, conversation.item.added,
// response.content_part.added, output_audio.delta chunks (with the
// transcript delta), output_audio.done, output_audio_transcript.done,
// content_part.done, output_item.done, response.done. A response.cancel
// from the client stops the deltas and ends with status cancelled.
func (c *Conn) StreamResponse(ctx context.Context, r Response) (Result, error) {
	if r.Chunk <= 0 {
		r.Chunk = 100 * time.Millisecond
	}
	sess := c.sessionCopy()
	format := sess.OutputFormat().FormatType()
	res := Result{ResponseID: c.srv.id("resp"), ItemID: c.srv.id("item")}
	// Forget cancels that arrived before this response.
	for len(c.cancels) > 0 {
		<-c.cancels
	}
	item := realtime.Item{ID: res.ItemID, Object: "realtime.item", Type: realtime.ItemMessage, Status: realtime.StatusInProgress, Role: realtime.RoleAssistant, Content: []realtime.ContentPart{}}
	steps := []realtime.Event{
		&realtime.ResponseCreated{Response: realtime.Response{ID: res.ResponseID, Object: "realtime.response", Status: realtime.StatusInProgress, Output: []realtime.Item{}, OutputModalities: []string{"audio"}}},
		&realtime.ResponseOutputItemAdded{ResponseID: res.ResponseID, Item: item},
		&realtime.ConversationItemAdded{Item: item},
		&realtime.ResponseContentPartAdded{ResponseID: res.ResponseID, ItemID: res.ItemID, Part: realtime.ContentPart{Type: realtime.ContentAudio}},
	}
	for _, e := range steps {
		if err := c.Send(e); err != nil {
			return res, err
		}
	}
	var tick <-chan time.Time
	if r.Paced {
		t := time.NewTicker(r.Chunk)
		defer t.Stop()
		tick = t.C
	}
	transcript := ""
	for res.Sent < r.Audio {
		select {
		case <-c.cancels:
			res.Cancelled = true
		case <-ctx.Done():
			return res, ctx.Err()
		default:
		}
		if res.Cancelled {
			break
		}
		if r.DropAfter > 0 && res.Sent >= r.DropAfter {
			c.Drop()
			res.Dropped = true
			return res, nil
		}
		d := min(r.Chunk, r.Audio-res.Sent)
		if err := c.Send(&realtime.ResponseOutputAudioDelta{ResponseID: res.ResponseID, ItemID: res.ItemID, Delta: Tone(format, d, res.Sent)}); err != nil {
			return res, err
		}
		if res.Sent == 0 && r.Transcript != "" {
			transcript = r.Transcript
			if err := c.Send(&realtime.ResponseOutputAudioTranscriptDelta{ResponseID: res.ResponseID, ItemID: res.ItemID, Delta: r.Transcript}); err != nil {
				return res, err
			}
		}
		res.Sent += d
		if tick != nil && res.Sent < r.Audio {
			select {
			case <-tick:
			case <-c.cancels:
				res.Cancelled = true
			case <-ctx.Done():
				return res, ctx.Err()
			}
		}
	}
	status, itemStatus := realtime.StatusCompleted, realtime.StatusCompleted
	details := realtime.Null[realtime.StatusDetails]()
	if res.Cancelled {
		status, itemStatus = realtime.StatusCancelled, realtime.StatusIncomplete
		details = realtime.Some(realtime.StatusDetails{Type: realtime.StatusCancelled, Reason: realtime.ReasonClientCancelled})
	}
	part := realtime.ContentPart{Type: realtime.ContentAudio, Transcript: transcript}
	item.Status = itemStatus
	item.Content = []realtime.ContentPart{{Type: realtime.ContentOutputAudio, Transcript: transcript}}
	steps = []realtime.Event{
		&realtime.ResponseOutputAudioDone{ResponseID: res.ResponseID, ItemID: res.ItemID},
		&realtime.ResponseOutputAudioTranscriptDone{ResponseID: res.ResponseID, ItemID: res.ItemID, Transcript: transcript},
		&realtime.ResponseContentPartDone{ResponseID: res.ResponseID, ItemID: res.ItemID, Part: part},
		&realtime.ResponseOutputItemDone{ResponseID: res.ResponseID, Item: item},
		&realtime.ResponseDone{Response: realtime.Response{ID: res.ResponseID, Object: "realtime.response", Status: status, StatusDetails: details, Output: []realtime.Item{item}, OutputModalities: []string{"audio"}}},
	}
	for _, e := range steps {
		if err := c.Send(e); err != nil {
			return res, err
		}
	}
	return res, nil
}

// FunctionCall sends a response in which the model calls name with the
// JSON arguments args (streamed in two deltas), and returns the call id.
// Follow it with AwaitFunctionOutput.
func (c *Conn) FunctionCall(name, args string) (callID string, err error) {
	respID, itemID := c.srv.id("resp"), c.srv.id("item")
	callID = c.srv.id("call")
	item := realtime.Item{ID: itemID, Object: "realtime.item", Type: realtime.ItemFunctionCall, Status: realtime.StatusInProgress, CallID: callID, Name: name}
	half := len(args) / 2
	done := item
	done.Status, done.Arguments = realtime.StatusCompleted, args
	for _, e := range []realtime.Event{
		&realtime.ResponseCreated{Response: realtime.Response{ID: respID, Object: "realtime.response", Status: realtime.StatusInProgress, Output: []realtime.Item{}}},
		&realtime.ResponseOutputItemAdded{ResponseID: respID, Item: item},
		&realtime.ConversationItemAdded{Item: item},
		&realtime.ResponseFunctionCallArgumentsDelta{ResponseID: respID, ItemID: itemID, CallID: callID, Delta: args[:half]},
		&realtime.ResponseFunctionCallArgumentsDelta{ResponseID: respID, ItemID: itemID, CallID: callID, Delta: args[half:]},
		&realtime.ResponseFunctionCallArgumentsDone{ResponseID: respID, ItemID: itemID, CallID: callID, Name: name, Arguments: args},
		&realtime.ResponseOutputItemDone{ResponseID: respID, Item: done},
		&realtime.ResponseDone{Response: realtime.Response{ID: respID, Object: "realtime.response", Status: realtime.StatusCompleted, Output: []realtime.Item{done}}},
	} {
		if err := c.Send(e); err != nil {
			return callID, err
		}
	}
	return callID, nil
}

// AwaitFunctionOutput waits for the client's conversation.item.create with
// the function_call_output of callID, answers conversation.item.added, and
// returns the output.
func (c *Conn) AwaitFunctionOutput(ctx context.Context, callID string) (string, error) {
	for {
		e, err := c.Expect(ctx, realtime.TypeConversationItemCreate)
		if err != nil {
			return "", err
		}
		it := e.(*realtime.ConversationItemCreate).Item
		if it.Type != realtime.ItemFunctionCallOutput || it.CallID != callID {
			continue
		}
		if it.ID == "" {
			it.ID = c.srv.id("item")
		}
		it.Object, it.Status = "realtime.item", realtime.StatusCompleted
		if err := c.Send(&realtime.ConversationItemAdded{Item: it}); err != nil {
			return "", err
		}
		return it.Output, nil
	}
}
