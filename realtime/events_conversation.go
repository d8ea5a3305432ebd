// Server events of the conversation family: items added, done, retrieved, deleted, truncated, and input transcriptions.

package realtime

import "encoding/json"

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
