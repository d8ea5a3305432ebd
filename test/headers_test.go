package test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// everyHeader is an INVITE's worth of the headers sip.forward_headers
// keeps by default, and two it does not.
var everyHeader = []string{
	"X-Account-Id: 42",
	"X-Campaign: spring",
	"User-to-User: 56a390f3d2b7310023a2;encoding=hex",
	`P-Asserted-Identity: "Alice A" <sip:+15550001111@carrier.example>`,
	"P-Preferred-Identity: <sip:alice@pbx.example>",
	"Remote-Party-ID: <sip:+15550001111@pbx.example>;party=calling;screen=yes",
	"Identity: eyJhbGciOiJFUzI1NiJ9.e30.c2ln;info=<https://cert.example/c.pem>",
	"Privacy: none",
	"History-Info: <sip:+15559990000@pbx.example>;index=1",
	"Diversion: <sip:+15559990000@pbx.example>;reason=unconditional",
	"Diversion: <sip:+15559990001@pbx.example>;reason=no-answer",
	"Referred-By: <sip:bob@pbx.example>",
	"User-Agent: TestPBX 1.0",
	"Subject: not forwarded",
	"Organization: not forwarded either",
}

// TestHeadersForwardedToWebhook: sipp sends each header of the default
// list; the webhook's sip_headers has every one of them, in the INVITE's
// order, X-* included (they were dropped by a second list before), and
// nothing else. With sip.forward_headers set, only what it names.
func TestHeadersForwardedToWebhook(t *testing.T) {
	t.Parallel()
	const number = "+14155550171"
	h := newHookReceiver(t, 0)
	d := controlDaemon(t, map[string]string{"SWITCHBOARD_RING_TIMEOUT": "1s"}, h, number)
	run := callWithHeaders(t, d, number, headersCaller{CallerName: "Alice Example", Headers: everyHeader, Mode: "480"})
	in := h.next(t, "realtime.call.incoming", 5*time.Second)
	run.wait(t, 15*time.Second)

	var names []string
	values := map[string][]string{}
	for _, x := range in.Data["sip_headers"].([]any) {
		m := x.(map[string]any)
		n, v := m["name"].(string), m["value"].(string)
		names = append(names, n)
		values[n] = append(values[n], v)
	}
	require.Equal(t, []string{"From", "To", "Call-ID", "X-Account-Id", "X-Campaign", "User-to-User", "P-Asserted-Identity",
		"P-Preferred-Identity", "Remote-Party-ID", "Identity", "Privacy", "History-Info", "Diversion", "Diversion",
		"Referred-By", "User-Agent"}, names)
	require.Equal(t, []string{"42"}, values["X-Account-Id"])
	require.Equal(t, []string{"56a390f3d2b7310023a2;encoding=hex"}, values["User-to-User"])
	require.Equal(t, []string{"<sip:+15559990000@pbx.example>;reason=unconditional", "<sip:+15559990001@pbx.example>;reason=no-answer"}, values["Diversion"])
	require.Contains(t, values["From"][0], "Alice Example")

	t.Run("configured", func(t *testing.T) {
		t.Parallel()
		const number = "+14155550172"
		h := newHookReceiver(t, 0)
		d := controlDaemon(t, map[string]string{"SWITCHBOARD_RING_TIMEOUT": "1s",
			"SWITCHBOARD_SIP_FORWARD_HEADERS": "x-account-*,Subject"}, h, number)
		run := callWithHeaders(t, d, number, headersCaller{CallerName: "Alice", Headers: everyHeader, Mode: "480"})
		in := h.next(t, "realtime.call.incoming", 5*time.Second)
		run.wait(t, 15*time.Second)
		require.Equal(t, []any{map[string]any{"name": "X-Account-Id", "value": "42"}, map[string]any{"name": "Subject", "value": "not forwarded"}},
			in.Data["sip_headers"])
	})
}
