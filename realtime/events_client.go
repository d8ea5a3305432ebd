// Client and server event types, one struct per type of the spec's Events section.

package realtime

// Client event types.
const (
	// TypeSessionUpdate is the type of SessionUpdate.
	TypeSessionUpdate = "session.update"
	// TypeInputAudioBufferAppend is the type of InputAudioBufferAppend.
	TypeInputAudioBufferAppend = "input_audio_buffer.append"
	// TypeInputAudioBufferCommit is the type of InputAudioBufferCommit.
	TypeInputAudioBufferCommit = "input_audio_buffer.commit"
	// TypeInputAudioBufferClear is the type of InputAudioBufferClear.
	TypeInputAudioBufferClear = "input_audio_buffer.clear"
	// TypeOutputAudioBufferClear is the type of OutputAudioBufferClear.
	TypeOutputAudioBufferClear = "output_audio_buffer.clear"
	// TypeConversationItemCreate is the type of ConversationItemCreate.
	TypeConversationItemCreate = "conversation.item.create"
	// TypeConversationItemDelete is the type of ConversationItemDelete.
	TypeConversationItemDelete = "conversation.item.delete"
	// TypeConversationItemRetrieve is the type of ConversationItemRetrieve.
	TypeConversationItemRetrieve = "conversation.item.retrieve"
	// TypeConversationItemTruncate is the type of ConversationItemTruncate.
	TypeConversationItemTruncate = "conversation.item.truncate"
	// TypeResponseCreate is the type of ResponseCreate.
	TypeResponseCreate = "response.create"
	// TypeResponseCancel is the type of ResponseCancel.
	TypeResponseCancel = "response.cancel"
)

// SessionUpdate (session.update, client event) updates the session configuration; answered by session.updated.
type SessionUpdate struct {
	Header
	// Session holds the members to change.
	Session SessionConfig `json:"session"`
}

// EventType returns TypeSessionUpdate.
func (*SessionUpdate) EventType() string { return TypeSessionUpdate }

// InputAudioBufferAppend (input_audio_buffer.append, client event) adds audio to the input buffer; it has no reply.
type InputAudioBufferAppend struct {
	Header
	// Audio is the raw audio in the input format (base64 on the wire).
	Audio []byte `json:"audio"`
}

// EventType returns TypeInputAudioBufferAppend.
func (*InputAudioBufferAppend) EventType() string { return TypeInputAudioBufferAppend }

// InputAudioBufferCommit (input_audio_buffer.commit, client event) commits the input buffer as a user message (only when turn_detection is null); answered by input_audio_buffer.committed.
type InputAudioBufferCommit struct {
	Header
}

// EventType returns TypeInputAudioBufferCommit.
func (*InputAudioBufferCommit) EventType() string { return TypeInputAudioBufferCommit }

// InputAudioBufferClear (input_audio_buffer.clear, client event) discards pending input audio; answered by input_audio_buffer.cleared.
type InputAudioBufferClear struct {
	Header
}

// EventType returns TypeInputAudioBufferClear.
func (*InputAudioBufferClear) EventType() string { return TypeInputAudioBufferClear }

// OutputAudioBufferClear (output_audio_buffer.clear, client event) cuts off the audio being played (WebRTC and SIP transports).
type OutputAudioBufferClear struct {
	Header
}

// EventType returns TypeOutputAudioBufferClear.
func (*OutputAudioBufferClear) EventType() string { return TypeOutputAudioBufferClear }

// ConversationItemCreate (conversation.item.create, client event) adds an item to the conversation; answered by conversation.item.added.
type ConversationItemCreate struct {
	Header
	// PreviousItemID places the item after that item ("root" for the start).
	PreviousItemID string `json:"previous_item_id,omitempty"`
	// Item is the item to add.
	Item Item `json:"item"`
}

// EventType returns TypeConversationItemCreate.
func (*ConversationItemCreate) EventType() string { return TypeConversationItemCreate }

// ConversationItemDelete (conversation.item.delete, client event) removes an item; answered by conversation.item.deleted.
type ConversationItemDelete struct {
	Header
	// ItemID is the item to delete.
	ItemID string `json:"item_id"`
}

// EventType returns TypeConversationItemDelete.
func (*ConversationItemDelete) EventType() string { return TypeConversationItemDelete }

// ConversationItemRetrieve (conversation.item.retrieve, client event) asks for an item; answered by conversation.item.retrieved.
type ConversationItemRetrieve struct {
	Header
	// ItemID is the item to return.
	ItemID string `json:"item_id"`
}

// EventType returns TypeConversationItemRetrieve.
func (*ConversationItemRetrieve) EventType() string { return TypeConversationItemRetrieve }

// ConversationItemTruncate (conversation.item.truncate, client event) cuts assistant audio after a given duration; answered by conversation.item.truncated.
type ConversationItemTruncate struct {
	Header
	// ItemID is the assistant message item to truncate.
	ItemID string `json:"item_id"`
	// ContentIndex is the audio content part (0).
	ContentIndex int `json:"content_index"`
	// AudioEndMs is how much audio was heard, in milliseconds.
	AudioEndMs int `json:"audio_end_ms"`
}

// EventType returns TypeConversationItemTruncate.
func (*ConversationItemTruncate) EventType() string { return TypeConversationItemTruncate }

// ResponseCreate (response.create, client event) asks for an assistant response (automatic with server VAD).
type ResponseCreate struct {
	Header
	// Response overrides session settings for this response.
	Response *ResponseParams `json:"response,omitempty"`
}

// EventType returns TypeResponseCreate.
func (*ResponseCreate) EventType() string { return TypeResponseCreate }

// ResponseCancel (response.cancel, client event) cancels an in-progress response.
type ResponseCancel struct {
	Header
	// ResponseID is the response to cancel (default: the one in progress).
	ResponseID string `json:"response_id,omitempty"`
}

// EventType returns TypeResponseCancel.
func (*ResponseCancel) EventType() string { return TypeResponseCancel }

func init() {
	register(
		func() Event { return new(SessionUpdate) },
		func() Event { return new(InputAudioBufferAppend) },
		func() Event { return new(InputAudioBufferCommit) },
		func() Event { return new(InputAudioBufferClear) },
		func() Event { return new(OutputAudioBufferClear) },
		func() Event { return new(ConversationItemCreate) },
		func() Event { return new(ConversationItemDelete) },
		func() Event { return new(ConversationItemRetrieve) },
		func() Event { return new(ConversationItemTruncate) },
		func() Event { return new(ResponseCreate) },
		func() Event { return new(ResponseCancel) },
	)
}

// ClientTypes lists every client event type this package models.
var ClientTypes = []string{
	TypeSessionUpdate,
	TypeInputAudioBufferAppend,
	TypeInputAudioBufferCommit,
	TypeInputAudioBufferClear,
	TypeOutputAudioBufferClear,
	TypeConversationItemCreate,
	TypeConversationItemDelete,
	TypeConversationItemRetrieve,
	TypeConversationItemTruncate,
	TypeResponseCreate,
	TypeResponseCancel,
}
