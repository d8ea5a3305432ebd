package realtime

import "encoding/json"

// Item types, roles and content part types of conversation items.
const (
	ItemMessage            = "message"
	ItemFunctionCall       = "function_call"
	ItemFunctionCallOutput = "function_call_output"

	RoleUser      = "user"
	RoleAssistant = "assistant"
	RoleSystem    = "system"

	ContentInputText   = "input_text"
	ContentInputAudio  = "input_audio"
	ContentOutputText  = "output_text"
	ContentOutputAudio = "output_audio"
	// ContentAudio and ContentText are the part types of
	// response.content_part.added/done.
	ContentAudio = "audio"
	ContentText  = "text"

	StatusCompleted  = "completed"
	StatusInProgress = "in_progress"
	StatusIncomplete = "incomplete"
	StatusCancelled  = "cancelled"
	StatusFailed     = "failed"
)

// Item is a conversation item: a message (user, assistant or system), a
// function_call or a function_call_output. MCP item members are kept in
// Extra.
type Item struct {
	// ID is the item id (client-chosen or server-generated).
	ID string `json:"id,omitempty"`
	// Object is "realtime.item" in server events.
	Object string `json:"object,omitempty"`
	// Type is ItemMessage, ItemFunctionCall or ItemFunctionCallOutput.
	Type string `json:"type"`
	// Status is completed, incomplete or in_progress.
	Status string `json:"status,omitempty"`
	// Role is user, assistant or system (messages only).
	Role string `json:"role,omitempty"`
	// Content is the message content.
	Content []ContentPart `json:"content,omitzero"`
	// CallID ties a function_call to its function_call_output.
	CallID string `json:"call_id,omitempty"`
	// Name is the called function's name.
	Name string `json:"name,omitempty"`
	// Arguments is the JSON-encoded arguments of a function_call.
	Arguments string `json:"arguments,omitempty"`
	// Output is the function's result in a function_call_output.
	Output string `json:"output,omitempty"`
	// Extra holds members not modelled above.
	Extra Extra `json:"-"`
}

// MarshalJSON writes the item; a function_call_output always carries output
// and a function_call always carries arguments, even when empty.
func (it Item) MarshalJSON() ([]byte, error) {
	type plain Item
	b, err := marshalWithExtra(plain(it), it.Extra)
	if err != nil {
		return nil, err
	}
	var req string
	switch {
	case it.Type == ItemFunctionCallOutput && it.Output == "":
		req = `"output":""`
	case it.Type == ItemFunctionCall && it.Arguments == "":
		req = `"arguments":""`
	default:
		return b, nil
	}
	out := append([]byte(nil), b[:len(b)-1]...)
	if len(b) > 2 {
		out = append(out, ',')
	}
	out = append(out, req...)
	return append(out, '}'), nil
}

// UnmarshalJSON reads the item, keeping unknown members in Extra.
func (it *Item) UnmarshalJSON(b []byte) error {
	type plain Item
	var p plain
	extra, err := unmarshalWithExtra(b, &p)
	if err != nil {
		return err
	}
	*it = Item(p)
	it.Extra = extra
	return nil
}

// UserText returns a user message item holding one input_text part.
func UserText(text string) Item {
	return Item{Type: ItemMessage, Role: RoleUser, Content: []ContentPart{{Type: ContentInputText, Text: text}}}
}

// FunctionCallOutput returns a function_call_output item for callID.
func FunctionCallOutput(callID, output string) Item {
	return Item{Type: ItemFunctionCallOutput, CallID: callID, Output: output}
}

// ContentPart is one part of a message's content, or the part of
// response.content_part.added/done.
type ContentPart struct {
	// Type is input_text, input_audio, output_text, output_audio, audio or
	// text.
	Type string `json:"type,omitempty"`
	// Text is the text of a text part.
	Text string `json:"text,omitempty"`
	// Audio is the audio of an audio part (base64 on the wire).
	Audio []byte `json:"audio,omitempty"`
	// Transcript is the transcript of an audio part.
	Transcript string `json:"transcript,omitempty"`
	// ImageURL is an input_image data URI.
	ImageURL string `json:"image_url,omitempty"`
	// Detail is an input_image detail level.
	Detail string `json:"detail,omitempty"`
}

// MarshalJSON writes the part with the members the reference sends even
// when they are empty, since the official clients' schemas require them:
// an input_audio part carries "transcript": null until it is transcribed,
// an audio or output_audio part a transcript string, a text part its text.
func (p ContentPart) MarshalJSON() ([]byte, error) {
	type plain ContentPart
	b, err := json.Marshal(plain(p))
	if err != nil {
		return nil, err
	}
	var req string
	switch p.Type {
	case ContentInputAudio:
		if p.Transcript == "" {
			req = `"transcript":null`
		}
	case ContentAudio, ContentOutputAudio:
		if p.Transcript == "" {
			req = `"transcript":""`
		}
	case ContentInputText, ContentOutputText, ContentText:
		if p.Text == "" {
			req = `"text":""`
		}
	}
	if req == "" {
		return b, nil
	}
	out := append([]byte(nil), b[:len(b)-1]...)
	if len(b) > 2 {
		out = append(out, ',')
	}
	out = append(out, req...)
	return append(out, '}'), nil
}

// Conversation is the conversation object of conversation.created.
type Conversation struct {
	// ID is the conversation id.
	ID string `json:"id,omitempty"`
	// Object is "realtime.conversation".
	Object string `json:"object,omitempty"`
}

// Response is the response resource of response.created and response.done.
type Response struct {
	// ID is the response id.
	ID string `json:"id,omitempty"`
	// Object is "realtime.response".
	Object string `json:"object,omitempty"`
	// Status is in_progress, completed, cancelled, failed or incomplete.
	Status string `json:"status,omitempty"`
	// StatusDetails says why a response did not complete: set, null (the
	// reference's value while in progress or completed) or absent.
	StatusDetails Nullable[StatusDetails] `json:"status_details,omitzero"`
	// Output lists the response's output items.
	Output []Item `json:"output,omitzero"`
	// ConversationID is the conversation the response belongs to.
	ConversationID string `json:"conversation_id,omitempty"`
	// OutputModalities is ["audio"] or ["text"].
	OutputModalities []string `json:"output_modalities,omitzero"`
	// Audio is the response's audio output config.
	Audio *AudioConfig `json:"audio,omitempty"`
	// Usage is kept raw.
	Usage json.RawMessage `json:"usage,omitempty"`
	// Metadata is kept raw.
	Metadata json.RawMessage `json:"metadata,omitempty"`
	// MaxOutputTokens is an integer or "inf"; kept raw.
	MaxOutputTokens json.RawMessage `json:"max_output_tokens,omitempty"`
	// Extra holds members not modelled above.
	Extra Extra `json:"-"`
}

// MarshalJSON writes the object with its extra members.
func (r Response) MarshalJSON() ([]byte, error) {
	type plain Response
	return marshalWithExtra(plain(r), r.Extra)
}

// UnmarshalJSON reads the object, keeping unknown members in Extra.
func (r *Response) UnmarshalJSON(b []byte) error {
	type plain Response
	var p plain
	extra, err := unmarshalWithExtra(b, &p)
	if err != nil {
		return err
	}
	*r = Response(p)
	r.Extra = extra
	return nil
}

// Status detail reasons.
const (
	ReasonTurnDetected    = "turn_detected"
	ReasonClientCancelled = "client_cancelled"
)

// StatusDetails is a response's status_details.
type StatusDetails struct {
	// Type mirrors the status (cancelled, failed, incomplete).
	Type string `json:"type,omitempty"`
	// Reason is turn_detected or client_cancelled for cancelled responses.
	Reason string `json:"reason,omitempty"`
	// Error describes a failure.
	Error *ErrorDetail `json:"error,omitempty"`
}

// ResponseParams is the optional response member of response.create.
type ResponseParams struct {
	// OutputModalities is ["audio"] or ["text"].
	OutputModalities []string `json:"output_modalities,omitzero"`
	// Instructions override the session's for this response.
	Instructions string `json:"instructions,omitempty"`
	// Audio overrides the output audio settings.
	Audio *AudioConfig `json:"audio,omitempty"`
	// Tools override the session's tools.
	Tools []Tool `json:"tools,omitzero"`
	// ToolChoice is kept raw.
	ToolChoice json.RawMessage `json:"tool_choice,omitempty"`
	// MaxOutputTokens is kept raw.
	MaxOutputTokens json.RawMessage `json:"max_output_tokens,omitempty"`
	// Conversation is "auto" or "none".
	Conversation string `json:"conversation,omitempty"`
	// Metadata is kept raw.
	Metadata json.RawMessage `json:"metadata,omitempty"`
	// Input replaces the conversation as the response's context.
	Input []Item `json:"input,omitzero"`
	// Extra holds members not modelled above.
	Extra Extra `json:"-"`
}

// MarshalJSON writes the object with its extra members.
func (r ResponseParams) MarshalJSON() ([]byte, error) {
	type plain ResponseParams
	return marshalWithExtra(plain(r), r.Extra)
}

// UnmarshalJSON reads the object, keeping unknown members in Extra.
func (r *ResponseParams) UnmarshalJSON(b []byte) error {
	type plain ResponseParams
	var p plain
	extra, err := unmarshalWithExtra(b, &p)
	if err != nil {
		return err
	}
	*r = ResponseParams(p)
	r.Extra = extra
	return nil
}

// Error types of ErrorDetail.Type.
const (
	ErrorInvalidRequest = "invalid_request_error"
	ErrorServer         = "server_error"
)

// ErrorDetail is the error member of an error event.
type ErrorDetail struct {
	// Type is invalid_request_error, server_error, ….
	Type string `json:"type"`
	// Code is a machine-readable code.
	Code string `json:"code,omitempty"`
	// Message is human readable.
	Message string `json:"message"`
	// Param names the offending parameter.
	Param string `json:"param,omitempty"`
	// EventID is the client event that caused the error.
	EventID string `json:"event_id,omitempty"`
}

// Error formats the detail as an error string.
func (e *ErrorDetail) Error() string {
	if e.Code != "" {
		return e.Type + " " + e.Code + ": " + e.Message
	}
	return e.Type + ": " + e.Message
}
