package usage

import (
	"testing"

	"github.com/stretchr/testify/require"

	"switchboard/store"
)

func TestParseFilter(t *testing.T) {
	tests := []struct {
		in   string
		want Filter
	}{
		{`phone_number="+14155550123"`, Filter{Field: "phone_number", Value: "+14155550123"}},
		{`  route = "agent:ag_1"  `, Filter{Field: "route", Value: "agent:ag_1"}},
		{`ended_by!="caller"`, Filter{Field: "ended_by", Not: true, Value: "caller"}},
		{`ended_by != ""`, Filter{Field: "ended_by", Not: true, Value: ""}},
		{`route="quote \" and \\ and \u00e9"`, Filter{Field: "route", Value: "quote \" and \\ and é"}},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			f, err := ParseFilter(tt.in)
			require.NoError(t, err)
			require.Equal(t, tt.want, f)
			again, err := ParseFilter(f.String())
			require.NoError(t, err)
			require.Equal(t, f, again, "String is a filter that parses back")
		})
	}
	for _, bad := range []string{
		``, `   `, `="x"`, `phone_number`, `phone_number=`, `phone_number=x`, `phone_number='x'`, "phone_number=`x`",
		`phone_number=="x"`, `phone_number~"x"`, `phone_number<"x"`, `from="x"`, `Phone_Number="x"`, `state="ended"`,
		`phone_number="x" AND route="y"`, `phone_number="x`, `phone_number="\q"`, `phone_number="x"y`,
	} {
		_, err := ParseFilter(bad)
		require.ErrorIs(t, err, errBadFilter, "%q", bad)
	}
}

func TestFilterMatch(t *testing.T) {
	c := &store.CallSpan{PhoneNumber: "+1", Route: "echo", EndedBy: "caller"}
	require.True(t, Filter{Field: "phone_number", Value: "+1"}.match(c))
	require.False(t, Filter{Field: "phone_number", Not: true, Value: "+1"}.match(c))
	require.True(t, Filter{Field: "route", Not: true, Value: "agent:x"}.match(c))
	require.False(t, Filter{Field: "ended_by", Value: "agent"}.match(c))
}

func FuzzParseFilter(f *testing.F) {
	for _, s := range []string{`phone_number="+1"`, `route != "a\"b"`, `ended_by=""`, `x`, `route="\u00e9"`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		flt, err := ParseFilter(s)
		if err != nil {
			return
		}
		require.NotNil(t, dimensions[flt.Field])
		again, err := ParseFilter(flt.String())
		require.NoError(t, err, "%q → %q", s, flt.String())
		require.Equal(t, flt, again)
	})
}
