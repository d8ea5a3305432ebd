package echo

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"switchboard/realtime"
)

// TestEchoCallsANamedFunctionTool: a user text name({...}) that names one
// of the session's function tools is answered with a function_call in the
// reference's event order; the function_call_output that the client
// returns is then spoken. Text that only looks like a call, or names no
// tool of the session, is echoed as usual.
func TestEchoCallsANamedFunctionTool(t *testing.T) {
	ctx := context.Background()
	s := open(t, Options{Unpaced: true}, realtime.SessionConfig{OutputModalities: []string{"text"},
		Tools: []realtime.Tool{{Type: "function", Name: "get_weather", Parameters: json.RawMessage(`{"type":"object"}`)}}})
	require.NoError(t, s.Send(ctx, &realtime.ConversationItemCreate{Item: realtime.UserText(`get_weather({"city":"Paris"})`)}))
	require.Equal(t, realtime.TypeConversationItemAdded, next(t, s).EventType())
	require.Equal(t, realtime.TypeConversationItemDone, next(t, s).EventType())
	require.NoError(t, s.Send(ctx, &realtime.ResponseCreate{}))

	var order []string
	var call realtime.Item
	for {
		e := next(t, s)
		order = append(order, e.EventType())
		if d, ok := e.(*realtime.ResponseOutputItemDone); ok {
			call = d.Item
		}
		if e.EventType() == realtime.TypeResponseDone {
			break
		}
	}
	require.Equal(t, []string{realtime.TypeResponseCreated, realtime.TypeResponseOutputItemAdded, realtime.TypeConversationItemAdded,
		realtime.TypeResponseFunctionCallArgumentsDelta, realtime.TypeResponseFunctionCallArgumentsDone,
		realtime.TypeResponseOutputItemDone, realtime.TypeConversationItemDone, realtime.TypeResponseDone}, order)
	require.Equal(t, realtime.ItemFunctionCall, call.Type)
	require.Equal(t, realtime.StatusCompleted, call.Status)
	require.Equal(t, "get_weather", call.Name)
	require.JSONEq(t, `{"city":"Paris"}`, call.Arguments)
	require.NotEmpty(t, call.CallID)

	require.NoError(t, s.Send(ctx, &realtime.ConversationItemCreate{Item: realtime.FunctionCallOutput(call.CallID, "Sunny.")}))
	next(t, s)
	next(t, s)
	require.NoError(t, s.Send(ctx, &realtime.ResponseCreate{}))
	for {
		e := next(t, s)
		if d, ok := e.(*realtime.ResponseOutputTextDone); ok {
			require.Equal(t, "Sunny.", d.Text)
			break
		}
	}
	next(t, s) // content_part.done
	next(t, s) // output_item.done
	next(t, s) // conversation.item.done
	require.Equal(t, realtime.TypeResponseDone, next(t, s).EventType())

	for _, text := range []string{`other_tool({})`, `get_weather(not json)`, `get_weather`} {
		require.NoError(t, s.Send(ctx, &realtime.ConversationItemCreate{Item: realtime.UserText(text)}))
		next(t, s)
		next(t, s)
		require.NoError(t, s.Send(ctx, &realtime.ResponseCreate{}))
		require.Equal(t, realtime.TypeResponseCreated, next(t, s).EventType())
		added := next(t, s).(*realtime.ResponseOutputItemAdded)
		require.Equal(t, realtime.ItemMessage, added.Item.Type, text)
		for next(t, s).EventType() != realtime.TypeResponseDone {
		}
	}
}

// TestEchoResponseCarriesTheReferenceMembers: the echo engine's responses
// carry the members the reference always sends, the nullable ones as null.
func TestEchoResponseCarriesTheReferenceMembers(t *testing.T) {
	ctx := context.Background()
	s := open(t, Options{Unpaced: true}, realtime.SessionConfig{OutputModalities: []string{"text"}})
	require.NoError(t, s.Send(ctx, &realtime.ConversationItemCreate{Item: realtime.UserText("hi")}))
	next(t, s)
	next(t, s)
	require.NoError(t, s.Send(ctx, &realtime.ResponseCreate{}))
	for _, typ := range []string{realtime.TypeResponseCreated, realtime.TypeResponseDone} {
		var e realtime.Event
		for e = next(t, s); e.EventType() != typ; e = next(t, s) {
		}
		b, err := realtime.Encode(e)
		require.NoError(t, err)
		var m struct {
			Response map[string]json.RawMessage `json:"response"`
		}
		require.NoError(t, json.Unmarshal(b, &m))
		for _, k := range []string{"status_details", "usage", "metadata"} {
			require.Equal(t, "null", string(m.Response[k]), "%s %s", typ, k)
		}
		require.Equal(t, `"inf"`, string(m.Response["max_output_tokens"]))
		require.Contains(t, string(m.Response["conversation_id"]), "conv_")
	}
}
