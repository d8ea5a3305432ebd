// Client and server event types, one struct per type of the spec's Events section.

package realtime

import "encoding/json"

// Server event types.
const (
	// TypeError is the type of ErrorEvent.
	TypeError = "error"
	// TypeSessionCreated is the type of SessionCreated.
	TypeSessionCreated = "session.created"
	// TypeSessionUpdated is the type of SessionUpdated.
	TypeSessionUpdated = "session.updated"
	// TypeConversationCreated is the type of ConversationCreated.
	TypeConversationCreated = "conversation.created"
	// TypeConversationItemAdded is the type of ConversationItemAdded.
	TypeConversationItemAdded = "conversation.item.added"
	// TypeConversationItemDone is the type of ConversationItemDone.
	TypeConversationItemDone = "conversation.item.done"
	// TypeConversationItemRetrieved is the type of ConversationItemRetrieved.
	TypeConversationItemRetrieved = "conversation.item.retrieved"
	// TypeConversationItemDeleted is the type of ConversationItemDeleted.
	TypeConversationItemDeleted = "conversation.item.deleted"
	// TypeConversationItemTruncated is the type of ConversationItemTruncated.
	TypeConversationItemTruncated = "conversation.item.truncated"
	// TypeInputAudioTranscriptionCompleted is the type of InputAudioTranscriptionCompleted.
	TypeInputAudioTranscriptionCompleted = "conversation.item.input_audio_transcription.completed"
	// TypeInputAudioTranscriptionUpdated is the type of InputAudioTranscriptionUpdated.
	TypeInputAudioTranscriptionUpdated = "conversation.item.input_audio_transcription.updated"
	// TypeInputAudioTranscriptionDelta is the type of InputAudioTranscriptionDelta.
	TypeInputAudioTranscriptionDelta = "conversation.item.input_audio_transcription.delta"
	// TypeInputAudioTranscriptionFailed is the type of InputAudioTranscriptionFailed.
	TypeInputAudioTranscriptionFailed = "conversation.item.input_audio_transcription.failed"
	// TypeInputAudioBufferCommitted is the type of InputAudioBufferCommitted.
	TypeInputAudioBufferCommitted = "input_audio_buffer.committed"
	// TypeInputAudioBufferCleared is the type of InputAudioBufferCleared.
	TypeInputAudioBufferCleared = "input_audio_buffer.cleared"
	// TypeInputAudioBufferSpeechStarted is the type of InputAudioBufferSpeechStarted.
	TypeInputAudioBufferSpeechStarted = "input_audio_buffer.speech_started"
	// TypeInputAudioBufferSpeechStopped is the type of InputAudioBufferSpeechStopped.
	TypeInputAudioBufferSpeechStopped = "input_audio_buffer.speech_stopped"
	// TypeInputAudioBufferTimeoutTriggered is the type of InputAudioBufferTimeoutTriggered.
	TypeInputAudioBufferTimeoutTriggered = "input_audio_buffer.timeout_triggered"
	// TypeInputAudioBufferDTMFEventReceived is the type of InputAudioBufferDTMFEventReceived.
	TypeInputAudioBufferDTMFEventReceived = "input_audio_buffer.dtmf_event_received"
	// TypeResponseCreated is the type of ResponseCreated.
	TypeResponseCreated = "response.created"
	// TypeResponseDone is the type of ResponseDone.
	TypeResponseDone = "response.done"
	// TypeResponseOutputItemAdded is the type of ResponseOutputItemAdded.
	TypeResponseOutputItemAdded = "response.output_item.added"
	// TypeResponseOutputItemDone is the type of ResponseOutputItemDone.
	TypeResponseOutputItemDone = "response.output_item.done"
	// TypeResponseContentPartAdded is the type of ResponseContentPartAdded.
	TypeResponseContentPartAdded = "response.content_part.added"
	// TypeResponseContentPartDone is the type of ResponseContentPartDone.
	TypeResponseContentPartDone = "response.content_part.done"
	// TypeResponseOutputAudioDelta is the type of ResponseOutputAudioDelta.
	TypeResponseOutputAudioDelta = "response.output_audio.delta"
	// TypeResponseOutputAudioDone is the type of ResponseOutputAudioDone.
	TypeResponseOutputAudioDone = "response.output_audio.done"
	// TypeResponseOutputAudioTranscriptDelta is the type of ResponseOutputAudioTranscriptDelta.
	TypeResponseOutputAudioTranscriptDelta = "response.output_audio_transcript.delta"
	// TypeResponseOutputAudioTranscriptDone is the type of ResponseOutputAudioTranscriptDone.
	TypeResponseOutputAudioTranscriptDone = "response.output_audio_transcript.done"
	// TypeResponseOutputTextDelta is the type of ResponseOutputTextDelta.
	TypeResponseOutputTextDelta = "response.output_text.delta"
	// TypeResponseTextDelta is the type of ResponseTextDelta.
	TypeResponseTextDelta = "response.text.delta"
	// TypeResponseOutputTextDone is the type of ResponseOutputTextDone.
	TypeResponseOutputTextDone = "response.output_text.done"
	// TypeResponseTextDone is the type of ResponseTextDone.
	TypeResponseTextDone = "response.text.done"
	// TypeResponseFunctionCallArgumentsDelta is the type of ResponseFunctionCallArgumentsDelta.
	TypeResponseFunctionCallArgumentsDelta = "response.function_call_arguments.delta"
	// TypeResponseFunctionCallArgumentsDone is the type of ResponseFunctionCallArgumentsDone.
	TypeResponseFunctionCallArgumentsDone = "response.function_call_arguments.done"
	// TypeMCPListToolsInProgress is the type of MCPListToolsInProgress.
	TypeMCPListToolsInProgress = "mcp_list_tools.in_progress"
	// TypeMCPListToolsCompleted is the type of MCPListToolsCompleted.
	TypeMCPListToolsCompleted = "mcp_list_tools.completed"
	// TypeMCPListToolsFailed is the type of MCPListToolsFailed.
	TypeMCPListToolsFailed = "mcp_list_tools.failed"
	// TypeResponseMCPCallArgumentsDelta is the type of ResponseMCPCallArgumentsDelta.
	TypeResponseMCPCallArgumentsDelta = "response.mcp_call_arguments.delta"
	// TypeResponseMCPCallArgumentsDone is the type of ResponseMCPCallArgumentsDone.
	TypeResponseMCPCallArgumentsDone = "response.mcp_call_arguments.done"
	// TypeResponseMCPCallInProgress is the type of ResponseMCPCallInProgress.
	TypeResponseMCPCallInProgress = "response.mcp_call.in_progress"
	// TypeResponseMCPCallCompleted is the type of ResponseMCPCallCompleted.
	TypeResponseMCPCallCompleted = "response.mcp_call.completed"
	// TypeResponseMCPCallFailed is the type of ResponseMCPCallFailed.
	TypeResponseMCPCallFailed = "response.mcp_call.failed"
)

// ErrorEvent (error, server event) reports an error; most errors are recoverable and the session stays open.
type ErrorEvent struct {
	Header
	// Error describes the error.
	Error ErrorDetail `json:"error"`
}

// EventType returns TypeError.
func (*ErrorEvent) EventType() string { return TypeError }

// SessionCreated (session.created, server event) is the first event of a session and holds its configuration.
type SessionCreated struct {
	Header
	// Session is the configuration in force.
	Session SessionConfig `json:"session"`
}

// EventType returns TypeSessionCreated.
func (*SessionCreated) EventType() string { return TypeSessionCreated }

// SessionUpdated (session.updated, server event) answers session.update with the full configuration in force.
type SessionUpdated struct {
	Header
	// Session is the configuration in force.
	Session SessionConfig `json:"session"`
}

// EventType returns TypeSessionUpdated.
func (*SessionUpdated) EventType() string { return TypeSessionUpdated }

// ConversationCreated (conversation.created, server event) follows session.created when a session opens.
type ConversationCreated struct {
	Header
	// Conversation is the new conversation.
	Conversation Conversation `json:"conversation"`
}

// EventType returns TypeConversationCreated.
func (*ConversationCreated) EventType() string { return TypeConversationCreated }

// ConversationItemAdded (conversation.item.added, server event) reports an item added to the conversation.
type ConversationItemAdded struct {
	Header
	// PreviousItemID is the item after which the item was placed.
	PreviousItemID string `json:"previous_item_id,omitempty"`
	// Item is the item.
	Item Item `json:"item"`
}

// EventType returns TypeConversationItemAdded.
func (*ConversationItemAdded) EventType() string { return TypeConversationItemAdded }

// ConversationItemDone (conversation.item.done, server event) reports an item that is final.
type ConversationItemDone struct {
	Header
	// PreviousItemID is the item after which the item was placed.
	PreviousItemID string `json:"previous_item_id,omitempty"`
	// Item is the item.
	Item Item `json:"item"`
}

// EventType returns TypeConversationItemDone.
func (*ConversationItemDone) EventType() string { return TypeConversationItemDone }

// ConversationItemRetrieved (conversation.item.retrieved, server event) answers conversation.item.retrieve.
type ConversationItemRetrieved struct {
	Header
	// Item is the item.
	Item Item `json:"item"`
}

// EventType returns TypeConversationItemRetrieved.
func (*ConversationItemRetrieved) EventType() string { return TypeConversationItemRetrieved }

// ConversationItemDeleted (conversation.item.deleted, server event) answers conversation.item.delete.
type ConversationItemDeleted struct {
	Header
	// ItemID is the deleted item.
	ItemID string `json:"item_id"`
}

// EventType returns TypeConversationItemDeleted.
func (*ConversationItemDeleted) EventType() string { return TypeConversationItemDeleted }

// ConversationItemTruncated (conversation.item.truncated, server event) answers conversation.item.truncate.
type ConversationItemTruncated struct {
	Header
	// ItemID is the truncated item.
	ItemID string `json:"item_id"`
	// ContentIndex is the truncated content part.
	ContentIndex int `json:"content_index"`
	// AudioEndMs is where the audio now ends, in milliseconds.
	AudioEndMs int `json:"audio_end_ms"`
}

// EventType returns TypeConversationItemTruncated.
func (*ConversationItemTruncated) EventType() string { return TypeConversationItemTruncated }

// InputAudioTranscriptionCompleted (conversation.item.input_audio_transcription.completed, server event) carries the transcript of a user audio item.
type InputAudioTranscriptionCompleted struct {
	Header
	// ItemID is the user item.
	ItemID string `json:"item_id"`
	// ContentIndex is the index of the content part in the item's content.
	ContentIndex int `json:"content_index"`
	// Transcript is the transcribed text.
	Transcript string `json:"transcript"`
	// Logprobs is kept raw.
	Logprobs json.RawMessage `json:"logprobs,omitempty"`
	// Usage is kept raw.
	Usage json.RawMessage `json:"usage,omitempty"`
}

// EventType returns TypeInputAudioTranscriptionCompleted.
func (*InputAudioTranscriptionCompleted) EventType() string {
	return TypeInputAudioTranscriptionCompleted
}

// InputAudioTranscriptionUpdated (conversation.item.input_audio_transcription.updated, server event) carries a cumulative transcript that may correct earlier ones.
type InputAudioTranscriptionUpdated struct {
	Header
	// ItemID is the user item.
	ItemID string `json:"item_id"`
	// ContentIndex is the index of the content part in the item's content.
	ContentIndex int `json:"content_index"`
	// Transcript is the cumulative transcript.
	Transcript string `json:"transcript"`
}

// EventType returns TypeInputAudioTranscriptionUpdated.
func (*InputAudioTranscriptionUpdated) EventType() string { return TypeInputAudioTranscriptionUpdated }

// InputAudioTranscriptionDelta (conversation.item.input_audio_transcription.delta, server event) carries part of a user audio transcript.
type InputAudioTranscriptionDelta struct {
	Header
	// ItemID is the user item.
	ItemID string `json:"item_id"`
	// ContentIndex is the index of the content part in the item's content.
	ContentIndex int `json:"content_index"`
	// Delta is the text delta.
	Delta string `json:"delta"`
	// Logprobs is kept raw.
	Logprobs json.RawMessage `json:"logprobs,omitempty"`
}

// EventType returns TypeInputAudioTranscriptionDelta.
func (*InputAudioTranscriptionDelta) EventType() string { return TypeInputAudioTranscriptionDelta }

// InputAudioTranscriptionFailed (conversation.item.input_audio_transcription.failed, server event) reports a failed input transcription.
type InputAudioTranscriptionFailed struct {
	Header
	// ItemID is the user item.
	ItemID string `json:"item_id"`
	// ContentIndex is the index of the content part in the item's content.
	ContentIndex int `json:"content_index"`
	// Error describes the failure.
	Error ErrorDetail `json:"error"`
}

// EventType returns TypeInputAudioTranscriptionFailed.
func (*InputAudioTranscriptionFailed) EventType() string { return TypeInputAudioTranscriptionFailed }

// InputAudioBufferCommitted (input_audio_buffer.committed, server event) reports the input buffer committed as a user item.
type InputAudioBufferCommitted struct {
	Header
	// PreviousItemID is the item after which the item was placed.
	PreviousItemID string `json:"previous_item_id,omitempty"`
	// ItemID is the user item that will be created.
	ItemID string `json:"item_id"`
}

// EventType returns TypeInputAudioBufferCommitted.
func (*InputAudioBufferCommitted) EventType() string { return TypeInputAudioBufferCommitted }

// InputAudioBufferCleared (input_audio_buffer.cleared, server event) answers input_audio_buffer.clear.
type InputAudioBufferCleared struct {
	Header
}

// EventType returns TypeInputAudioBufferCleared.
func (*InputAudioBufferCleared) EventType() string { return TypeInputAudioBufferCleared }

// InputAudioBufferSpeechStarted (input_audio_buffer.speech_started, server event) reports speech detected by server VAD.
type InputAudioBufferSpeechStarted struct {
	Header
	// AudioStartMs is where speech starts in the session's input audio, prefix padding included.
	AudioStartMs int `json:"audio_start_ms"`
	// ItemID is the user item that will be created.
	ItemID string `json:"item_id"`
}

// EventType returns TypeInputAudioBufferSpeechStarted.
func (*InputAudioBufferSpeechStarted) EventType() string { return TypeInputAudioBufferSpeechStarted }

// InputAudioBufferSpeechStopped (input_audio_buffer.speech_stopped, server event) reports the end of speech detected by server VAD.
type InputAudioBufferSpeechStopped struct {
	Header
	// AudioEndMs is where speech ends in the session's input audio, silence duration included.
	AudioEndMs int `json:"audio_end_ms"`
	// ItemID is the user item that will be created.
	ItemID string `json:"item_id"`
}

// EventType returns TypeInputAudioBufferSpeechStopped.
func (*InputAudioBufferSpeechStopped) EventType() string { return TypeInputAudioBufferSpeechStopped }

// InputAudioBufferTimeoutTriggered (input_audio_buffer.timeout_triggered, server event) reports that the idle timer fired after the assistant finished.
type InputAudioBufferTimeoutTriggered struct {
	Header
	// AudioStartMs is where the idle audio starts.
	AudioStartMs int `json:"audio_start_ms"`
	// AudioEndMs is where the idle audio ends.
	AudioEndMs int `json:"audio_end_ms"`
	// ItemID is the item of the idle segment.
	ItemID string `json:"item_id"`
}

// EventType returns TypeInputAudioBufferTimeoutTriggered.
func (*InputAudioBufferTimeoutTriggered) EventType() string {
	return TypeInputAudioBufferTimeoutTriggered
}

// InputAudioBufferDTMFEventReceived (input_audio_buffer.dtmf_event_received, server event) reports one DTMF key pressed by the caller (SIP only).
type InputAudioBufferDTMFEventReceived struct {
	Header
	// Event is the key: 0-9, *, #, A-D.
	Event string `json:"event"`
	// ReceivedAt is when the key was received, Unix seconds.
	ReceivedAt int64 `json:"received_at"`
}

// EventType returns TypeInputAudioBufferDTMFEventReceived.
func (*InputAudioBufferDTMFEventReceived) EventType() string {
	return TypeInputAudioBufferDTMFEventReceived
}

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

// MCPListToolsInProgress (mcp_list_tools.in_progress, server event) reports an MCP tool listing under way.
type MCPListToolsInProgress struct {
	Header
	// ItemID is the item the event is about.
	ItemID string `json:"item_id"`
}

// EventType returns TypeMCPListToolsInProgress.
func (*MCPListToolsInProgress) EventType() string { return TypeMCPListToolsInProgress }

// MCPListToolsCompleted (mcp_list_tools.completed, server event) reports an MCP tool listing done.
type MCPListToolsCompleted struct {
	Header
	// ItemID is the item the event is about.
	ItemID string `json:"item_id"`
}

// EventType returns TypeMCPListToolsCompleted.
func (*MCPListToolsCompleted) EventType() string { return TypeMCPListToolsCompleted }

// MCPListToolsFailed (mcp_list_tools.failed, server event) reports an MCP tool listing failed.
type MCPListToolsFailed struct {
	Header
	// ItemID is the item the event is about.
	ItemID string `json:"item_id"`
}

// EventType returns TypeMCPListToolsFailed.
func (*MCPListToolsFailed) EventType() string { return TypeMCPListToolsFailed }

// ResponseMCPCallArgumentsDelta (response.mcp_call_arguments.delta, server event) carries part of an MCP call's arguments.
type ResponseMCPCallArgumentsDelta struct {
	Header
	// ResponseID is the response the event belongs to.
	ResponseID string `json:"response_id"`
	// ItemID is the item the event is about.
	ItemID string `json:"item_id"`
	// OutputIndex is the index of the output item in the response.
	OutputIndex int `json:"output_index"`
	// Delta is the arguments delta.
	Delta string `json:"delta"`
	// Obfuscation is padding some providers add.
	Obfuscation string `json:"obfuscation,omitempty"`
}

// EventType returns TypeResponseMCPCallArgumentsDelta.
func (*ResponseMCPCallArgumentsDelta) EventType() string { return TypeResponseMCPCallArgumentsDelta }

// ResponseMCPCallArgumentsDone (response.mcp_call_arguments.done, server event) carries an MCP call's final arguments.
type ResponseMCPCallArgumentsDone struct {
	Header
	// ResponseID is the response the event belongs to.
	ResponseID string `json:"response_id"`
	// ItemID is the item the event is about.
	ItemID string `json:"item_id"`
	// OutputIndex is the index of the output item in the response.
	OutputIndex int `json:"output_index"`
	// Arguments is the JSON-encoded arguments.
	Arguments string `json:"arguments"`
}

// EventType returns TypeResponseMCPCallArgumentsDone.
func (*ResponseMCPCallArgumentsDone) EventType() string { return TypeResponseMCPCallArgumentsDone }

// ResponseMCPCallInProgress (response.mcp_call.in_progress, server event) reports an MCP call under way.
type ResponseMCPCallInProgress struct {
	Header
	// OutputIndex is the index of the output item in the response.
	OutputIndex int `json:"output_index"`
	// ItemID is the item the event is about.
	ItemID string `json:"item_id"`
}

// EventType returns TypeResponseMCPCallInProgress.
func (*ResponseMCPCallInProgress) EventType() string { return TypeResponseMCPCallInProgress }

// ResponseMCPCallCompleted (response.mcp_call.completed, server event) reports an MCP call done.
type ResponseMCPCallCompleted struct {
	Header
	// OutputIndex is the index of the output item in the response.
	OutputIndex int `json:"output_index"`
	// ItemID is the item the event is about.
	ItemID string `json:"item_id"`
}

// EventType returns TypeResponseMCPCallCompleted.
func (*ResponseMCPCallCompleted) EventType() string { return TypeResponseMCPCallCompleted }

// ResponseMCPCallFailed (response.mcp_call.failed, server event) reports an MCP call failed.
type ResponseMCPCallFailed struct {
	Header
	// OutputIndex is the index of the output item in the response.
	OutputIndex int `json:"output_index"`
	// ItemID is the item the event is about.
	ItemID string `json:"item_id"`
}

// EventType returns TypeResponseMCPCallFailed.
func (*ResponseMCPCallFailed) EventType() string { return TypeResponseMCPCallFailed }

func init() {
	register(
		func() Event { return new(ErrorEvent) },
		func() Event { return new(SessionCreated) },
		func() Event { return new(SessionUpdated) },
		func() Event { return new(ConversationCreated) },
		func() Event { return new(ConversationItemAdded) },
		func() Event { return new(ConversationItemDone) },
		func() Event { return new(ConversationItemRetrieved) },
		func() Event { return new(ConversationItemDeleted) },
		func() Event { return new(ConversationItemTruncated) },
		func() Event { return new(InputAudioTranscriptionCompleted) },
		func() Event { return new(InputAudioTranscriptionUpdated) },
		func() Event { return new(InputAudioTranscriptionDelta) },
		func() Event { return new(InputAudioTranscriptionFailed) },
		func() Event { return new(InputAudioBufferCommitted) },
		func() Event { return new(InputAudioBufferCleared) },
		func() Event { return new(InputAudioBufferSpeechStarted) },
		func() Event { return new(InputAudioBufferSpeechStopped) },
		func() Event { return new(InputAudioBufferTimeoutTriggered) },
		func() Event { return new(InputAudioBufferDTMFEventReceived) },
		func() Event { return new(ResponseCreated) },
		func() Event { return new(ResponseDone) },
		func() Event { return new(ResponseOutputItemAdded) },
		func() Event { return new(ResponseOutputItemDone) },
		func() Event { return new(ResponseContentPartAdded) },
		func() Event { return new(ResponseContentPartDone) },
		func() Event { return new(ResponseOutputAudioDelta) },
		func() Event { return new(ResponseOutputAudioDone) },
		func() Event { return new(ResponseOutputAudioTranscriptDelta) },
		func() Event { return new(ResponseOutputAudioTranscriptDone) },
		func() Event { return new(ResponseOutputTextDelta) },
		func() Event { return new(ResponseTextDelta) },
		func() Event { return new(ResponseOutputTextDone) },
		func() Event { return new(ResponseTextDone) },
		func() Event { return new(ResponseFunctionCallArgumentsDelta) },
		func() Event { return new(ResponseFunctionCallArgumentsDone) },
		func() Event { return new(MCPListToolsInProgress) },
		func() Event { return new(MCPListToolsCompleted) },
		func() Event { return new(MCPListToolsFailed) },
		func() Event { return new(ResponseMCPCallArgumentsDelta) },
		func() Event { return new(ResponseMCPCallArgumentsDone) },
		func() Event { return new(ResponseMCPCallInProgress) },
		func() Event { return new(ResponseMCPCallCompleted) },
		func() Event { return new(ResponseMCPCallFailed) },
	)
}

// ServerTypes lists every server event type this package models.
var ServerTypes = []string{
	TypeError,
	TypeSessionCreated,
	TypeSessionUpdated,
	TypeConversationCreated,
	TypeConversationItemAdded,
	TypeConversationItemDone,
	TypeConversationItemRetrieved,
	TypeConversationItemDeleted,
	TypeConversationItemTruncated,
	TypeInputAudioTranscriptionCompleted,
	TypeInputAudioTranscriptionUpdated,
	TypeInputAudioTranscriptionDelta,
	TypeInputAudioTranscriptionFailed,
	TypeInputAudioBufferCommitted,
	TypeInputAudioBufferCleared,
	TypeInputAudioBufferSpeechStarted,
	TypeInputAudioBufferSpeechStopped,
	TypeInputAudioBufferTimeoutTriggered,
	TypeInputAudioBufferDTMFEventReceived,
	TypeResponseCreated,
	TypeResponseDone,
	TypeResponseOutputItemAdded,
	TypeResponseOutputItemDone,
	TypeResponseContentPartAdded,
	TypeResponseContentPartDone,
	TypeResponseOutputAudioDelta,
	TypeResponseOutputAudioDone,
	TypeResponseOutputAudioTranscriptDelta,
	TypeResponseOutputAudioTranscriptDone,
	TypeResponseOutputTextDelta,
	TypeResponseTextDelta,
	TypeResponseOutputTextDone,
	TypeResponseTextDone,
	TypeResponseFunctionCallArgumentsDelta,
	TypeResponseFunctionCallArgumentsDone,
	TypeMCPListToolsInProgress,
	TypeMCPListToolsCompleted,
	TypeMCPListToolsFailed,
	TypeResponseMCPCallArgumentsDelta,
	TypeResponseMCPCallArgumentsDone,
	TypeResponseMCPCallInProgress,
	TypeResponseMCPCallCompleted,
	TypeResponseMCPCallFailed,
}
