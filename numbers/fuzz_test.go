package numbers

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestNormalizeE164(t *testing.T) {
	cases := []struct {
		in, want string
		ok       bool
	}{
		{"+14155550100", "+14155550100", true},
		{"+1 (415) 555-0100", "+14155550100", true},
		{"+1.415.555.0100", "+14155550100", true},
		{"+44 20 7183 8750", "+442071838750", true},
		{"14155550100", "", false},
		{"+1415555010a", "", false},
		{"+15555550100", "", false}, // no such area code
		{"+", "", false},
		{"", "", false},
		{"+1234567890123456", "", false},
		{"++14155550100", "", false},
	}
	for _, c := range cases {
		got, ok := NormalizeE164(c.in)
		require.Equal(t, c.ok, ok, c.in)
		require.Equal(t, c.want, got, c.in)
	}
}

func FuzzNormalizeE164(f *testing.F) {
	for _, s := range []string{"+14155550100", "+1 (415) 555-0100", "+442071838750", "+", "+0", "++1", "+1-800-FLOWERS"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		e, ok := NormalizeE164(s)
		if !ok {
			return
		}
		if !strings.HasPrefix(e, "+") || len(e) > 16 {
			t.Fatalf("%q → %q is not E.164", s, e)
		}
		again, ok := NormalizeE164(e)
		if !ok || again != e {
			t.Fatalf("not idempotent: %q → %q → %q (%v)", s, e, again, ok)
		}
	})
}

func FuzzParsePrefix(f *testing.F) {
	for _, s := range []string{"10.0.0.0/8", "10.1.2.3", "::1", "2001:db8::/32", "fe80::1%eth0", "1.2.3.4/33", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		p, ok := parsePrefix(s)
		if !ok {
			return
		}
		if !p.IsValid() || p != p.Masked() {
			t.Fatalf("%q → %v is not a masked prefix", s, p)
		}
		again, ok := parsePrefix(p.String())
		if !ok || again != p {
			t.Fatalf("round trip: %q → %v → %v", s, p, again)
		}
	})
}

func BenchmarkNormalizeE164(b *testing.B) {
	for b.Loop() {
		NormalizeE164("+1 (415) 555-0100")
	}
}
