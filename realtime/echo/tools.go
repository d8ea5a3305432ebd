package echo

import (
	"encoding/json"
	"strings"

	"switchboard/realtime"
)

// toolCall reads a user text of the form name({"json":"arguments"}) that
// names one of the session's function tools: the echo engine's stand-in
// for a model deciding to call a function, so that clients can exercise
// their tool path offline. Arguments default to {}.
func (s *session) toolCall(text string) (name, args string, ok bool) {
	text = strings.TrimSpace(text)
	i := strings.IndexByte(text, '(')
	if i <= 0 || !strings.HasSuffix(text, ")") {
		return "", "", false
	}
	name, args = text[:i], strings.TrimSpace(text[i+1:len(text)-1])
	if args == "" {
		args = "{}"
	}
	if !json.Valid([]byte(args)) {
		return "", "", false
	}
	for _, t := range s.cfg.Tools {
		if t.Type == "function" && t.Name == name {
			return name, args, true
		}
	}
	return "", "", false
}

// functionCall answers with a function_call item, in the events order of
// the reference: response.created, output_item.added, the arguments,
// output_item.done (status completed), response.done. The client runs the
// function and returns a function_call_output item; the next response
// speaks that output.
func (s *session) functionCall(name, args string) {
	respID, itemID, callID := s.id("resp"), s.id("item"), s.id("call")
	prev := s.lastID()
	it := realtime.Item{ID: itemID, Object: "realtime.item", Type: realtime.ItemFunctionCall, Status: realtime.StatusInProgress, Name: name, CallID: callID}
	s.emit(&realtime.ResponseCreated{Response: s.reference(realtime.Response{ID: respID, Object: "realtime.response", Status: realtime.StatusInProgress,
		Output: []realtime.Item{}, OutputModalities: s.cfg.OutputModalities})})
	s.emit(&realtime.ResponseOutputItemAdded{ResponseID: respID, Item: it})
	s.emit(&realtime.ConversationItemAdded{PreviousItemID: prev, Item: it})
	s.emit(&realtime.ResponseFunctionCallArgumentsDelta{ResponseID: respID, ItemID: itemID, CallID: callID, Delta: args})
	s.emit(&realtime.ResponseFunctionCallArgumentsDone{ResponseID: respID, ItemID: itemID, CallID: callID, Name: name, Arguments: args})
	it.Status, it.Arguments = realtime.StatusCompleted, args
	s.items = append(s.items, &item{it: it})
	s.emit(&realtime.ResponseOutputItemDone{ResponseID: respID, Item: it})
	s.emit(&realtime.ConversationItemDone{PreviousItemID: prev, Item: it})
	s.emit(&realtime.ResponseDone{Response: s.reference(realtime.Response{ID: respID, Object: "realtime.response", Status: realtime.StatusCompleted,
		Output: []realtime.Item{it}, OutputModalities: s.cfg.OutputModalities})})
}
