// Server events of a response: its lifecycle, output items and content parts, audio, transcripts, text and function-call arguments.

package realtime

// ResponseCreated (response.created, server event) reports a new response.
type ResponseCreated struct {
	Header
	// Response is the response, status in_progress.
	Response Response `json:"response"`
}

// EventType returns TypeResponseCreated.
func (*ResponseCreated) EventType() string { return TypeResponseCreated }

// ResponseDone (response.done, server event) ends a response, after all its deltas.
type ResponseDone struct {
	Header
	// Response is the final response.
	Response Response `json:"response"`
}

// EventType returns TypeResponseDone.
func (*ResponseDone) EventType() string { return TypeResponseDone }

// ResponseOutputItemAdded (response.output_item.added, server event) reports a new output item of a response.
type ResponseOutputItemAdded struct {
	Header
	// ResponseID is the response the event belongs to.
	ResponseID string `json:"response_id"`
	// OutputIndex is the index of the output item in the response.
	OutputIndex int `json:"output_index"`
	// Item is the item.
	Item Item `json:"item"`
}

// EventType returns TypeResponseOutputItemAdded.
func (*ResponseOutputItemAdded) EventType() string { return TypeResponseOutputItemAdded }

// ResponseOutputItemDone (response.output_item.done, server event) reports an output item that is final.
type ResponseOutputItemDone struct {
	Header
	// ResponseID is the response the event belongs to.
	ResponseID string `json:"response_id"`
	// OutputIndex is the index of the output item in the response.
	OutputIndex int `json:"output_index"`
	// Item is the item.
	Item Item `json:"item"`
}

// EventType returns TypeResponseOutputItemDone.
func (*ResponseOutputItemDone) EventType() string { return TypeResponseOutputItemDone }

// ResponseContentPartAdded (response.content_part.added, server event) reports a new content part of an output item.
type ResponseContentPartAdded struct {
	Header
	// ResponseID is the response the event belongs to.
	ResponseID string `json:"response_id"`
	// ItemID is the item the event is about.
	ItemID string `json:"item_id"`
	// OutputIndex is the index of the output item in the response.
	OutputIndex int `json:"output_index"`
	// ContentIndex is the index of the content part in the item's content.
	ContentIndex int `json:"content_index"`
	// Part is the part.
	Part ContentPart `json:"part"`
}

// EventType returns TypeResponseContentPartAdded.
func (*ResponseContentPartAdded) EventType() string { return TypeResponseContentPartAdded }

// ResponseContentPartDone (response.content_part.done, server event) reports a content part that is final.
type ResponseContentPartDone struct {
	Header
	// ResponseID is the response the event belongs to.
	ResponseID string `json:"response_id"`
	// ItemID is the item the event is about.
	ItemID string `json:"item_id"`
	// OutputIndex is the index of the output item in the response.
	OutputIndex int `json:"output_index"`
	// ContentIndex is the index of the content part in the item's content.
	ContentIndex int `json:"content_index"`
	// Part is the part.
	Part ContentPart `json:"part"`
}

// EventType returns TypeResponseContentPartDone.
func (*ResponseContentPartDone) EventType() string { return TypeResponseContentPartDone }

// ResponseOutputAudioDelta (response.output_audio.delta, server event) carries a chunk of response audio.
type ResponseOutputAudioDelta struct {
	Header
	// ResponseID is the response the event belongs to.
	ResponseID string `json:"response_id"`
	// ItemID is the item the event is about.
	ItemID string `json:"item_id"`
	// OutputIndex is the index of the output item in the response.
	OutputIndex int `json:"output_index"`
	// ContentIndex is the index of the content part in the item's content.
	ContentIndex int `json:"content_index"`
	// Delta is the raw audio in the output format (base64 on the wire).
	Delta []byte `json:"delta"`

	// pooled: a session's reader made the event from its pool, and
	// Release hands it back (decoder.go).
	pooled bool
}

// EventType returns TypeResponseOutputAudioDelta.
func (*ResponseOutputAudioDelta) EventType() string { return TypeResponseOutputAudioDelta }

// ResponseOutputAudioDone (response.output_audio.done, server event) ends the audio of a content part.
type ResponseOutputAudioDone struct {
	Header
	// ResponseID is the response the event belongs to.
	ResponseID string `json:"response_id"`
	// ItemID is the item the event is about.
	ItemID string `json:"item_id"`
	// OutputIndex is the index of the output item in the response.
	OutputIndex int `json:"output_index"`
	// ContentIndex is the index of the content part in the item's content.
	ContentIndex int `json:"content_index"`
}

// EventType returns TypeResponseOutputAudioDone.
func (*ResponseOutputAudioDone) EventType() string { return TypeResponseOutputAudioDone }

// ResponseOutputAudioTranscriptDelta (response.output_audio_transcript.delta, server event) carries part of the transcript of response audio.
type ResponseOutputAudioTranscriptDelta struct {
	Header
	// ResponseID is the response the event belongs to.
	ResponseID string `json:"response_id"`
	// ItemID is the item the event is about.
	ItemID string `json:"item_id"`
	// OutputIndex is the index of the output item in the response.
	OutputIndex int `json:"output_index"`
	// ContentIndex is the index of the content part in the item's content.
	ContentIndex int `json:"content_index"`
	// Delta is the transcript delta.
	Delta string `json:"delta"`
}

// EventType returns TypeResponseOutputAudioTranscriptDelta.
func (*ResponseOutputAudioTranscriptDelta) EventType() string {
	return TypeResponseOutputAudioTranscriptDelta
}

// ResponseOutputAudioTranscriptDone (response.output_audio_transcript.done, server event) carries the final transcript of response audio.
type ResponseOutputAudioTranscriptDone struct {
	Header
	// ResponseID is the response the event belongs to.
	ResponseID string `json:"response_id"`
	// ItemID is the item the event is about.
	ItemID string `json:"item_id"`
	// OutputIndex is the index of the output item in the response.
	OutputIndex int `json:"output_index"`
	// ContentIndex is the index of the content part in the item's content.
	ContentIndex int `json:"content_index"`
	// Transcript is the whole transcript.
	Transcript string `json:"transcript"`
}

// EventType returns TypeResponseOutputAudioTranscriptDone.
func (*ResponseOutputAudioTranscriptDone) EventType() string {
	return TypeResponseOutputAudioTranscriptDone
}

// ResponseOutputTextDelta (response.output_text.delta, server event) carries a chunk of response text.
type ResponseOutputTextDelta struct {
	Header
	// ResponseID is the response the event belongs to.
	ResponseID string `json:"response_id"`
	// ItemID is the item the event is about.
	ItemID string `json:"item_id"`
	// OutputIndex is the index of the output item in the response.
	OutputIndex int `json:"output_index"`
	// ContentIndex is the index of the content part in the item's content.
	ContentIndex int `json:"content_index"`
	// Delta is the text delta.
	Delta string `json:"delta"`
}

// EventType returns TypeResponseOutputTextDelta.
func (*ResponseOutputTextDelta) EventType() string { return TypeResponseOutputTextDelta }

// ResponseTextDelta (response.text.delta, server event) is the older name of response.output_text.delta, with the same shape; clients handle both.
type ResponseTextDelta struct {
	Header
	// ResponseID is the response the event belongs to.
	ResponseID string `json:"response_id"`
	// ItemID is the item the event is about.
	ItemID string `json:"item_id"`
	// OutputIndex is the index of the output item in the response.
	OutputIndex int `json:"output_index"`
	// ContentIndex is the index of the content part in the item's content.
	ContentIndex int `json:"content_index"`
	// Delta is the text delta.
	Delta string `json:"delta"`
}

// EventType returns TypeResponseTextDelta.
func (*ResponseTextDelta) EventType() string { return TypeResponseTextDelta }

// ResponseOutputTextDone (response.output_text.done, server event) carries the final response text.
type ResponseOutputTextDone struct {
	Header
	// ResponseID is the response the event belongs to.
	ResponseID string `json:"response_id"`
	// ItemID is the item the event is about.
	ItemID string `json:"item_id"`
	// OutputIndex is the index of the output item in the response.
	OutputIndex int `json:"output_index"`
	// ContentIndex is the index of the content part in the item's content.
	ContentIndex int `json:"content_index"`
	// Text is the whole text.
	Text string `json:"text"`
}

// EventType returns TypeResponseOutputTextDone.
func (*ResponseOutputTextDone) EventType() string { return TypeResponseOutputTextDone }

// ResponseTextDone (response.text.done, server event) is the older name of response.output_text.done.
type ResponseTextDone struct {
	Header
	// ResponseID is the response the event belongs to.
	ResponseID string `json:"response_id"`
	// ItemID is the item the event is about.
	ItemID string `json:"item_id"`
	// OutputIndex is the index of the output item in the response.
	OutputIndex int `json:"output_index"`
	// ContentIndex is the index of the content part in the item's content.
	ContentIndex int `json:"content_index"`
	// Text is the whole text.
	Text string `json:"text"`
}

// EventType returns TypeResponseTextDone.
func (*ResponseTextDone) EventType() string { return TypeResponseTextDone }

// ResponseFunctionCallArgumentsDelta (response.function_call_arguments.delta, server event) carries part of a function call's arguments.
type ResponseFunctionCallArgumentsDelta struct {
	Header
	// ResponseID is the response the event belongs to.
	ResponseID string `json:"response_id"`
	// ItemID is the item the event is about.
	ItemID string `json:"item_id"`
	// OutputIndex is the index of the output item in the response.
	OutputIndex int `json:"output_index"`
	// CallID is the function call id.
	CallID string `json:"call_id"`
	// Delta is the arguments delta.
	Delta string `json:"delta"`
}

// EventType returns TypeResponseFunctionCallArgumentsDelta.
func (*ResponseFunctionCallArgumentsDelta) EventType() string {
	return TypeResponseFunctionCallArgumentsDelta
}

// ResponseFunctionCallArgumentsDone (response.function_call_arguments.done, server event) carries a function call's final arguments; the client runs the function and returns a function_call_output item.
type ResponseFunctionCallArgumentsDone struct {
	Header
	// ResponseID is the response the event belongs to.
	ResponseID string `json:"response_id"`
	// ItemID is the item the event is about.
	ItemID string `json:"item_id"`
	// OutputIndex is the index of the output item in the response.
	OutputIndex int `json:"output_index"`
	// CallID is the function call id.
	CallID string `json:"call_id"`
	// Name is the function name.
	Name string `json:"name,omitempty"`
	// Arguments is the JSON-encoded arguments.
	Arguments string `json:"arguments"`
}

// EventType returns TypeResponseFunctionCallArgumentsDone.
func (*ResponseFunctionCallArgumentsDone) EventType() string {
	return TypeResponseFunctionCallArgumentsDone
}
