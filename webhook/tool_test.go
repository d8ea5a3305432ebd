package webhook

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"
	"github.com/stretchr/testify/require"
)

func TestToolClientSignsAndReturnsBody(t *testing.T) {
	secret := "whsec_" + "MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
	wh, err := standardwebhooks.NewWebhook(secret)
	require.NoError(t, err)
	var got ToolRequest
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if err := wh.Verify(body, r.Header); err != nil {
			http.Error(w, "bad signature", 401)
			return
		}
		require.NoError(t, json.Unmarshal(body, &got))
		if got.Name == "slow" {
			<-r.Context().Done() // answers only once the client gave up
			return
		}
		if got.Name == "broken" {
			http.Error(w, "boom", 500)
			return
		}
		w.Write([]byte(`{"balance":42}`))
	}))
	defer srv.Close()

	c, err := NewToolClient(secret)
	require.NoError(t, err)
	out, err := c.Call(context.Background(), srv.URL, ToolRequest{CallID: "c1", Name: "balance", Arguments: json.RawMessage(`{"account":"7"}`)})
	require.NoError(t, err)
	require.JSONEq(t, `{"balance":42}`, out)
	require.Equal(t, "c1", got.CallID)
	require.JSONEq(t, `{"account":"7"}`, string(got.Arguments))

	// A wrong secret is refused by the receiver; a 5xx and a timeout are errors.
	other, err := NewToolClient("whsec_" + "QUJDREVGR0hJSktMTU5PUFFSU1RVVldYWVphYmNk")
	require.NoError(t, err)
	_, err = other.Call(context.Background(), srv.URL, ToolRequest{CallID: "c2", Name: "balance"})
	require.ErrorContains(t, err, "401")
	_, err = c.Call(context.Background(), srv.URL, ToolRequest{CallID: "c3", Name: "broken"})
	require.ErrorContains(t, err, "500")
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	_, err = c.Call(ctx, srv.URL, ToolRequest{CallID: "c4", Name: "slow"})
	require.ErrorIs(t, err, context.DeadlineExceeded)
}
