package dtmf

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestPolicyValidate(t *testing.T) {
	tests := []struct {
		name string
		p    Policy
		err  string
	}{
		{name: "zero", p: Policy{}},
		{name: "redact", p: Policy{Mode: ModeRedact}},
		{name: "route", p: Policy{Mode: ModeRoute, Routes: map[string]Action{"0": {Kind: ActionTransfer, Target: "sip:op@pbx"}, "9": {Kind: ActionHangup}}}},
		{name: "unknown mode", p: Policy{Mode: "shout"}, err: `unknown mode "shout"`},
		{name: "routes without route mode", p: Policy{Mode: ModeRedact, Routes: map[string]Action{"0": {Kind: ActionHangup}}}, err: "routes need mode"},
		{name: "route without routes", p: Policy{Mode: ModeRoute}, err: "at least one route"},
		{name: "bad key", p: Policy{Mode: ModeRoute, Routes: map[string]Action{"12": {Kind: ActionHangup}}}, err: `key "12"`},
		{name: "lower-case key", p: Policy{Mode: ModeRoute, Routes: map[string]Action{"a": {Kind: ActionHangup}}}, err: `key "a"`},
		{name: "transfer without target", p: Policy{Mode: ModeRoute, Routes: map[string]Action{"0": {Kind: ActionTransfer}}}, err: "needs a target"},
		{name: "unknown action", p: Policy{Mode: ModeRoute, Routes: map[string]Action{"0": {Kind: "dance"}}}, err: `unknown action "dance"`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.p.Validate()
			if tc.err == "" {
				require.NoError(t, err)
				return
			}
			require.ErrorIs(t, err, errInvalidPolicy)
			require.ErrorContains(t, err, tc.err)
		})
	}
}

func TestPolicyJSON(t *testing.T) {
	var p Policy
	require.NoError(t, json.Unmarshal([]byte(`{"mode":"route","routes":{"0":{"kind":"transfer","target":"sip:op@pbx"},"9":{"kind":"hangup"}}}`), &p))
	require.NoError(t, p.Validate())
	a, ok := p.Route('0')
	require.True(t, ok)
	require.Equal(t, Action{Kind: ActionTransfer, Target: "sip:op@pbx"}, a)
	_, ok = p.Route('5')
	require.False(t, ok)
}

func TestModelText(t *testing.T) {
	model := Policy{}
	redact := Policy{Mode: ModeRedact}
	tests := []struct {
		f             Flush
		model, redact string
	}{
		{Flush{Digits: "1234", Reason: FlushHash},
			"The caller entered 1234 on the phone keypad and pressed # to finish.",
			"The caller entered 4 digits on the phone keypad and pressed # to finish. The digits are confidential and are not shown."},
		{Flush{Digits: "5", Reason: FlushIdle},
			"The caller entered 5 on the phone keypad.",
			"The caller entered 1 digit on the phone keypad. The digits are confidential and are not shown."},
		{Flush{Digits: "42", Reason: FlushSpeech},
			"The caller entered 42 on the phone keypad, then started speaking.",
			"The caller entered 2 digits on the phone keypad, then started speaking. The digits are confidential and are not shown."},
		{Flush{Reason: FlushHash}, "The caller pressed # on the phone keypad.", "The caller pressed # on the phone keypad."},
	}
	for _, tc := range tests {
		require.Equal(t, tc.model, model.ModelText(tc.f))
		require.Equal(t, tc.redact, redact.ModelText(tc.f))
	}
}

func TestRedaction(t *testing.T) {
	redact := Policy{Mode: ModeRedact}
	c, err := NewCollector(CollectorOptions{Policy: redact})
	require.NoError(t, err)
	t0 := time.Unix(1_700_000_000, 0)
	pan := "4111111111111111"
	var flush Flush
	for i := range len(pan) {
		r := c.Add(Event{Digit: pan[i], Source: SourceRTP, At: t0.Add(time.Duration(i) * 300 * time.Millisecond)})
		require.True(t, r.Accepted)
		// The controller still gets every key.
		require.Equal(t, string(pan[i]), r.Key.Notification().Event)
		require.False(t, r.HasFlush)
	}
	r := c.Add(Event{Digit: '#', Source: SourceRTP, At: t0.Add(6 * time.Second)})
	require.True(t, r.HasFlush)
	flush = r.Flush
	require.Equal(t, pan, flush.Digits, "tools get the digits")
	text := c.Policy().ModelText(flush)
	require.NotContains(t, text, "4111")
	require.NotContains(t, text, "1111")
	require.Contains(t, text, "16 digits")
	for d := range strings.SplitSeq("0123456789", "") {
		if d != "1" && d != "6" {
			require.NotContains(t, text, d)
		}
	}
	require.Equal(t, strings.Repeat("*", 16), c.Policy().LogDigits(flush.Digits))
	require.Equal(t, "1234", Policy{}.LogDigits("1234"))
}

func TestCollectorRoute(t *testing.T) {
	p := Policy{Mode: ModeRoute, Routes: map[string]Action{"0": {Kind: ActionTransfer, Target: "sip:operator@pbx"}, "9": {Kind: ActionHangup}}}
	c, err := NewCollector(CollectorOptions{Policy: p})
	require.NoError(t, err)
	t0 := time.Unix(1_700_000_000, 0)
	r := c.Add(Event{Digit: '1', Source: SourceRTP, At: t0})
	require.True(t, r.Accepted)
	require.False(t, r.HasAction)
	r = c.Add(Event{Digit: '0', Source: SourceRTP, At: t0.Add(time.Second)})
	require.True(t, r.HasAction)
	require.Equal(t, Action{Kind: ActionTransfer, Target: "sip:operator@pbx"}, r.Action)
	require.True(t, r.HasFlush, "what was typed before the routed key is flushed first")
	require.Equal(t, "1", r.Flush.Digits)
	r = c.Add(Event{Digit: '9', Source: SourceINFO, At: t0.Add(2 * time.Second)})
	require.Equal(t, Action{Kind: ActionHangup}, r.Action)
	require.False(t, r.HasFlush)
	_, ok := c.Deadline()
	require.False(t, ok)

	_, err = NewCollector(CollectorOptions{Policy: Policy{Mode: "nope"}})
	require.ErrorIs(t, err, errInvalidPolicy)
}
