// Server events: their type names, error and session events, and the registry of server types (events_*.go hold the other families).

package realtime

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
