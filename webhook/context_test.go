package webhook

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"
	"github.com/stretchr/testify/require"
)

// TestContextRequest: the call's facts go to the context_url as a signed
// realtime.call.context event, and the answer is read as a context; an
// empty answer is an empty context, anything else an error.
func TestContextRequest(t *testing.T) {
	secret := "whsec_" + "MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
	wh, err := standardwebhooks.NewWebhook(secret)
	require.NoError(t, err)
	answers := map[string]struct {
		status int
		body   string
		hang   bool
	}{
		"full":    {200, `{"variables":{"plan":"gold","visits":3},"instructions":"Be brief.","greeting":"Hi {{variables.plan}}","agent_id":"ag_2","extra":1}`, false},
		"empty":   {204, ``, false},
		"array":   {200, `[1,2]`, false},
		"null":    {200, `null`, false},
		"html":    {200, `<html>oops</html>`, false},
		"typed":   {200, `{"instructions":42}`, false},
		"refused": {503, `busy`, false},
		"hang":    {200, `{}`, true},
	}
	var got struct {
		Type string      `json:"type"`
		ID   string      `json:"id"`
		Data CallContext `json:"data"`
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if err := wh.Verify(body, r.Header); err != nil {
			http.Error(w, "bad signature", 401)
			return
		}
		require.NoError(t, json.Unmarshal(body, &got))
		require.Equal(t, got.ID, r.Header.Get("webhook-id"))
		a := answers[got.Data.CallID]
		if a.hang {
			select {
			case <-r.Context().Done():
			case <-time.After(5 * time.Second):
			}
			return
		}
		w.WriteHeader(a.status)
		_, _ = w.Write([]byte(a.body))
	}))
	defer srv.Close()
	c, err := NewToolClient(secret)
	require.NoError(t, err)
	ask := func(id string) (*ContextAnswer, error) {
		ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
		defer cancel()
		return c.Context(ctx, srv.URL, CallContext{CallID: id, PhoneNumberID: "pn_1", From: "+14155550123", To: "+18005550100",
			CallerName: "Alice", AgentID: "ag_1", SIPHeaders: []SIPHeader{{Name: "X-Account-Id", Value: "42"}}})
	}

	ans, err := ask("full")
	require.NoError(t, err)
	require.Equal(t, TypeCallContext, got.Type)
	require.Equal(t, "Alice", got.Data.CallerName)
	require.Equal(t, []SIPHeader{{Name: "X-Account-Id", Value: "42"}}, got.Data.SIPHeaders)
	require.JSONEq(t, `{"plan":"gold","visits":3}`, string(ans.Variables))
	require.Equal(t, "Be brief.", *ans.Instructions)
	require.Equal(t, "Hi {{variables.plan}}", *ans.Greeting)
	require.Equal(t, "ag_2", *ans.AgentID)

	ans, err = ask("empty")
	require.NoError(t, err)
	require.Equal(t, &ContextAnswer{}, ans)

	for _, id := range []string{"array", "null", "html", "typed"} {
		_, err = ask(id)
		require.ErrorIs(t, err, ErrBadAnswer, id)
	}
	_, err = ask("typed")
	require.ErrorContains(t, err, "instructions must be a string")
	_, err = ask("refused")
	var ce *ContextError
	require.True(t, errors.As(err, &ce), "%v", err)
	require.Equal(t, 503, ce.Status)
	start := time.Now()
	_, err = ask("hang")
	require.ErrorIs(t, err, context.DeadlineExceeded)
	require.Less(t, time.Since(start), 2*time.Second)
}
