package webhook

import (
	"encoding/json"
	"regexp"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestEventJSON(t *testing.T) {
	now := time.Unix(1700000000, 0)
	tests := []struct {
		name string
		ev   Event
		data string
	}{
		{
			name: "incoming",
			ev:   incoming(now),
			data: `{"call_id":"0b6c1c5e-4c1a-4c52-9d0e-6f9a4a0c2b11","phone_number_id":"pn_123","from":"+15550100","to":"+15550199","sip_headers":[` +
				`{"name":"From","value":"<sip:+15550100@pbx.example>;tag=a1"},` +
				`{"name":"To","value":"<sip:+15550199@switchboard.example>"},` +
				`{"name":"Call-ID","value":"abc@pbx.example"},` +
				`{"name":"P-Asserted-Identity","value":"<sip:+15550100@pbx.example>"},` +
				`{"name":"Diversion","value":"<sip:+15550111@pbx.example>;reason=no-answer"}]}`,
		},
		{
			name: "incoming without headers",
			ev:   NewCallIncoming(now, CallIncoming{CallID: "c1", PhoneNumberID: "pn", From: "a", To: "b"}),
			data: `{"call_id":"c1","phone_number_id":"pn","from":"a","to":"b","sip_headers":[]}`,
		},
		{
			name: "ended",
			ev:   NewCallEnded(now, CallEnded{CallID: "c1", PhoneNumberID: "pn", Reason: "hangup", EndedBy: EndedByCaller, DurationMS: 61234}),
			data: `{"call_id":"c1","phone_number_id":"pn","reason":"hangup","ended_by":"caller","duration_ms":61234}`,
		},
		{
			name: "transfer",
			ev:   NewCallTransfer(now, CallTransfer{CallID: "c1", TargetURI: "sip:100@pbx.example", Status: TransferFailed, SIPStatus: 486}),
			data: `{"call_id":"c1","target_uri":"sip:100@pbx.example","status":"failed","sip_status":486}`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b, err := json.Marshal(tt.ev)
			require.NoError(t, err)
			want := `{"id":"` + tt.ev.ID + `","object":"event","type":"` + tt.ev.Type + `","created_at":1700000000,"data":` + tt.data + `}`
			require.JSONEq(t, want, string(b))
		})
	}
}

func TestEventIDs(t *testing.T) {
	re := regexp.MustCompile(`^evt_[A-Z2-7]{26}$`)
	seen := make(map[string]bool)
	for range 1000 {
		id := NewEventID()
		require.Regexp(t, re, id)
		require.False(t, seen[id], "duplicate id %s", id)
		seen[id] = true
	}
	require.Equal(t, TypeCallIncoming, incoming(time.Now()).Type)
}

func TestTargetStringRedacts(t *testing.T) {
	tg := Target{ID: "wh_1", URL: "https://user:pw@example.com/hook?key=abc", SigningSecret: "whsec_c2VjcmV0", AuthToken: "id:topsecret", AuthURL: "https://auth.example.com/token"}
	s := tg.String()
	require.Equal(t, "webhook{id=wh_1 url=https://example.com/hook auth=oauth}", s)
}
