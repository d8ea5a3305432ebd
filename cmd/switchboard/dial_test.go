package main

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestParseDialTarget(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want dialTarget
		err  string
	}{
		{"sip:+14155550100@pbx.example.com", dialTarget{User: "+14155550100", Host: "pbx.example.com", Port: 5060}, ""},
		{"sip:+14155550100@127.0.0.1:5080", dialTarget{User: "+14155550100", Host: "127.0.0.1", Port: 5080}, ""},
		{"SIP:100@[::1]:5062;transport=TCP", dialTarget{User: "100", Host: "::1", Port: 5062, Transport: "tcp"}, ""},
		{"sip:100@[::1]", dialTarget{User: "100", Host: "::1", Port: 5060}, ""},
		{"100@10.0.0.1;user=phone;transport=udp?X-Foo=bar", dialTarget{User: "100", Host: "10.0.0.1", Port: 5060, Transport: "udp"}, ""},
		{"sip:alice@host:99999", dialTarget{}, "bad port"},
		{"sip:alice@host:0", dialTarget{}, "bad port"},
		{"sip:@host", dialTarget{}, "no number"},
		{"sip:host:5060", dialTarget{}, "no number"},
		{"sip:a b@host", dialTarget{}, "bad user"},
		{"sip:100@", dialTarget{}, "bad host"},
		{"sip:100@::1", dialTarget{}, "bad host"},
		{"sip:100@host;transport=tls", dialTarget{}, "transport \"tls\""},
		{"sips:100@host", dialTarget{}, "sips (TLS)"},
		{"tel:+14155550100", dialTarget{}, "want sip:"},
		{"http://host/", dialTarget{}, "want sip:"},
	} {
		t.Run(tc.in, func(t *testing.T) {
			got, err := parseDialTarget(tc.in)
			if tc.err != "" {
				require.ErrorIs(t, err, errBadTarget)
				require.ErrorContains(t, err, tc.err)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tc.want, got)
		})
	}
	got, err := parseDialTarget("sip:100@[::1]:5062")
	require.NoError(t, err)
	require.Equal(t, "sip:100@[::1]:5062", got.URI())
}

func FuzzParseDialTarget(f *testing.F) {
	for _, s := range []string{"sip:+14155550100@pbx.example.com:5060;transport=tcp", "100@[::1]", "sips:x@y", "sip:@:"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		tg, err := parseDialTarget(s)
		if err != nil {
			return
		}
		if tg.User == "" || tg.Host == "" || tg.Port <= 0 || tg.Port > 65535 {
			t.Fatalf("%q parsed to an unusable target %+v", s, tg)
		}
		again, err := parseDialTarget(tg.URI())
		if err != nil || again.User != tg.User || again.Host != tg.Host || again.Port != tg.Port {
			t.Fatalf("%q: URI %q does not parse back: %+v, %v", s, tg.URI(), again, err)
		}
	})
}

func TestParsePortRange(t *testing.T) {
	lo, hi, err := parsePortRange("30000-30999")
	require.NoError(t, err)
	require.Equal(t, []int{30000, 30999}, []int{lo, hi})
	for _, bad := range []string{"", "30000", "3-2", "0-10", "1-70000", "a-b"} {
		_, _, err := parsePortRange(bad)
		require.Error(t, err, bad)
	}
}
