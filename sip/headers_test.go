package sip

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestCheckHeadersAccepts(t *testing.T) {
	hs, err := CheckHeaders(map[string]string{
		"X-Account-Id":        " 42 ",
		"User-to-User":        "56a390f3d2b7310023a2;encoding=hex",
		"P-Asserted-Identity": `"Acme" <sip:+18005550100@carrier.example>`,
		"X-Tab":               "a\tb",
	})
	require.NoError(t, err)
	require.Equal(t, []Header{
		{Name: "P-Asserted-Identity", Value: `"Acme" <sip:+18005550100@carrier.example>`},
		{Name: "User-to-User", Value: "56a390f3d2b7310023a2;encoding=hex"},
		{Name: "X-Account-Id", Value: "42"},
		{Name: "X-Tab", Value: "a\tb"},
	}, hs, "sorted by name, values trimmed")
	hs, err = CheckHeaders(nil)
	require.NoError(t, err)
	require.Empty(t, hs)
}

func TestCheckHeadersRefuses(t *testing.T) {
	many := map[string]string{}
	for i := 0; i <= MaxHeaders; i++ {
		many[fmt.Sprintf("X-H%d", i)] = "v"
	}
	big := map[string]string{}
	for i := 0; i < MaxHeaders; i++ {
		big[fmt.Sprintf("X-H%d", i)] = strings.Repeat("v", MaxHeaderValue)
	}
	for _, tc := range []struct {
		name  string
		in    map[string]string
		param string
	}{
		{"cr", map[string]string{"X-Foo": "a\r\nVia: evil"}, "headers.X-Foo"},
		{"lf", map[string]string{"X-Foo": "a\nb"}, "headers.X-Foo"},
		{"nul", map[string]string{"X-Foo": "a\x00b"}, "headers.X-Foo"},
		{"empty", map[string]string{"X-Foo": " "}, "headers.X-Foo"},
		{"long", map[string]string{"X-Foo": strings.Repeat("a", MaxHeaderValue+1)}, "headers.X-Foo"},
		{"utf8", map[string]string{"X-Foo": "\xff"}, "headers.X-Foo"},
		{"name space", map[string]string{"X Foo": "a"}, "headers.X Foo"},
		{"name colon", map[string]string{"X-Foo:": "a"}, "headers.X-Foo:"},
		{"name empty", map[string]string{"": "a"}, "headers"},
		{"compact", map[string]string{"i": "a"}, "headers.i"},
		{"via", map[string]string{"Via": "SIP/2.0/UDP x"}, "headers.Via"},
		{"call-id any case", map[string]string{"call-ID": "x"}, "headers.call-ID"},
		{"cseq", map[string]string{"CSeq": "1 INVITE"}, "headers.CSeq"},
		{"contact", map[string]string{"Contact": "<sip:x@y>"}, "headers.Contact"},
		{"route", map[string]string{"Route": "<sip:x@y>"}, "headers.Route"},
		{"content", map[string]string{"Content-X": "a"}, "headers.Content-X"},
		{"max-forwards", map[string]string{"Max-Forwards": "1"}, "headers.Max-Forwards"},
		{"authorization", map[string]string{"Authorization": "Digest x"}, "headers.Authorization"},
		{"reason", map[string]string{"Reason": "SIP;cause=200"}, "headers.Reason"},
		{"twice", map[string]string{"X-A": "1", "x-a": "2"}, ""},
		{"too many", many, "headers"},
		{"too big", big, "headers"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := CheckHeaders(tc.in)
			var he *HeaderError
			require.True(t, errors.As(err, &he), "%v", err)
			if tc.param != "" {
				require.Equal(t, tc.param, he.Param("headers"))
			} else {
				require.Contains(t, []string{"headers.X-A", "headers.x-a"}, he.Param("headers"))
			}
		})
	}
}

func TestReasonValue(t *testing.T) {
	for in, want := range map[string]string{
		`Q.850;cause=16;text="Normal call clearing"`:      `Q.850;cause=16;text="Normal call clearing"`,
		`q.850 ; cause=17 ; text="User busy; call later"`: `Q.850;cause=17;text="User busy; call later"`,
		`SIP;cause=480;text="Callee away"`:                `SIP;cause=480;text="Callee away"`,
		`SIP;text="no cause first";cause=200`:             `SIP;cause=200;text="no cause first"`,
		`SIP;cause=200;text=plain`:                        `SIP;cause=200;text="plain"`,
		`Customer asked to end the call`:                  `SIP;cause=200;text="Customer asked to end the call"`,
		`She said "bye" \o/`:                              `SIP;cause=200;text="She said \"bye\" \\o/"`,
		`Q.850;cause=16;location=LN`:                      `Q.850;cause=16;location=LN`,
	} {
		got, err := ReasonValue(in)
		require.NoError(t, err, "%s", in)
		require.Equal(t, want, got, "%s", in)
	}
	for _, in := range []string{
		"", "text\r\nVia: x", `Q.850;cause=200`, `Q.850;cause=0`, `SIP;cause=99`, `SIP;cause="200"`, `SIP;text="x"`,
		`Q.850;cause=16;text="unterminated`, `Q.850;cause=16;text=two words`, `Q.850;cause`, strings.Repeat("a", 300),
	} {
		_, err := ReasonValue(in)
		require.Error(t, err, "%q", in)
	}
}

func TestDecodeHeaders(t *testing.T) {
	hs, err := DecodeHeaders([]byte(`{"X-B":"2","X-A":"1"}`))
	require.NoError(t, err)
	require.Equal(t, []Header{{Name: "X-A", Value: "1"}, {Name: "X-B", Value: "2"}}, hs)
	for _, none := range []string{``, `null`, `{}`} {
		hs, err = DecodeHeaders([]byte(none))
		require.NoError(t, err)
		require.Empty(t, hs)
	}
	for raw, param := range map[string]string{
		`{"X-A":42}`:        "headers.X-A",
		`{"X-A":{"b":1}}`:   "headers.X-A",
		`{"X-A":null}`:      "headers.X-A",
		`["X-A"]`:           "headers",
		`"X-A: 1"`:          "headers",
		`{"Via":"SIP/2.0"}`: "headers.Via",
	} {
		_, err := DecodeHeaders([]byte(raw))
		var he *HeaderError
		require.True(t, errors.As(err, &he), "%s: %v", raw, err)
		require.Equal(t, param, he.Param("headers"), raw)
	}
}
