package webhook

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"
)

// TypeCallContext is POSTed to a number's context_url while an
// agent-routed call rings: the answer gives the call its variables, and
// may change its agent, instructions or greeting. Data is CallContext.
const TypeCallContext = "realtime.call.context"

// CallContext is the data of a realtime.call.context request: the call's
// facts, as realtime.call.incoming carries them, and its agent.
type CallContext struct {
	// CallID is the appliance's call id.
	CallID string `json:"call_id"`
	// PhoneNumberID is the id of the number that matched the call.
	PhoneNumberID string `json:"phone_number_id"`
	// From is the caller, To the called number.
	From string `json:"from"`
	To   string `json:"to"`
	// CallerName is the caller's display name, when it has one.
	CallerName string `json:"caller_name,omitempty"`
	// AgentID is the number's agent ("" when the number names none and
	// the answer must).
	AgentID string `json:"agent_id,omitempty"`
	// SIPHeaders are the INVITE's headers the call kept at admission.
	// Never nil in the JSON.
	SIPHeaders []SIPHeader `json:"sip_headers"`
}

// ContextAnswer is a context_url's answer; every field is optional.
type ContextAnswer struct {
	// Variables is the JSON object of the call's own variables (checked
	// by the caller).
	Variables json.RawMessage `json:"variables"`
	// Instructions and Greeting, when set, replace the agent's.
	Instructions *string `json:"instructions"`
	Greeting     *string `json:"greeting"`
	// AgentID, when set, names the agent that takes the call.
	AgentID *string `json:"agent_id"`
}

// ErrBadAnswer means a context_url answered something that is not a
// context: not a JSON object, or a field of the wrong type.
var ErrBadAnswer = errors.New("webhook: the answer is not a context object")

// ContextError is a context_url's refusal: a status other than 2xx.
type ContextError struct {
	Status int
	Body   string
}

func (e *ContextError) Error() string {
	return fmt.Sprintf("context_url answered %d %s", e.Status, e.Body)
}

// Context POSTs the call's facts to url as a realtime.call.context event
// (the envelope of every webhook), signed like a tool call, once (the
// caller is waiting), within ctx. A 2xx answer with a JSON object is the
// context; 204 or an empty body is an empty one. Another status is a
// *ContextError, a body that is not a context object ErrBadAnswer.
func (c *ToolClient) Context(ctx context.Context, url string, data CallContext) (*ContextAnswer, error) {
	if data.SIPHeaders == nil {
		data.SIPHeaders = []SIPHeader{}
	}
	ev := NewEvent(TypeCallContext, time.Now(), data)
	payload, err := json.Marshal(ev)
	if err != nil {
		return nil, err
	}
	status, body, err := c.post(ctx, url, ev.ID, payload)
	if err != nil {
		return nil, fmt.Errorf("context_url: %w", err)
	}
	if status/100 != 2 {
		b := strings.TrimSpace(string(body))
		if len(b) > 200 {
			b = b[:200] + "…"
		}
		return nil, &ContextError{Status: status, Body: b}
	}
	ans := &ContextAnswer{}
	body = bytes.TrimSpace(body)
	if len(body) == 0 {
		return ans, nil
	}
	if body[0] != '{' {
		return nil, fmt.Errorf("%w: not a JSON object", ErrBadAnswer)
	}
	if err := json.Unmarshal(body, ans); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) && te.Field != "" {
			return nil, fmt.Errorf("%w: %s must be %s", ErrBadAnswer, te.Field, contextFieldType[te.Field])
		}
		return nil, fmt.Errorf("%w: not valid JSON", ErrBadAnswer)
	}
	return ans, nil
}

// contextFieldType names the JSON type of each field of a ContextAnswer.
var contextFieldType = map[string]string{"instructions": "a string", "greeting": "a string", "agent_id": "a string"}
