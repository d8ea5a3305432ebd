// Server events of the input audio buffer: commit, clear, speech start and stop, idle timeout, DTMF keys.

package realtime

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
