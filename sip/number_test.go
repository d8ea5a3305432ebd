package sip

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestNormalizeNumber(t *testing.T) {
	for _, tc := range []struct {
		raw, trunk, country, want string
	}{
		{"+14155550100", "", "US", "+14155550100"},
		{"sip:+14155550100@carrier.example;user=phone", "", "US", "+14155550100"},
		{"tel:+1-415-555-0100;npdi", "", "US", "+14155550100"},
		{"+44 (20) 7946.0000", "", "US", "+442079460000"},
		{"0044 20 7946 0000", "", "US", "+442079460000"},
		{"4155550100", "", "US", "+14155550100"},
		{"14155550100", "1", "US", "+14155550100"},
		{"14155550100", "", "US", "+14155550100"},
		{"02079460000", "0", "GB", "+442079460000"},
		{"02079460000", "", "GB", "+442079460000"},
		{"9014155550100", "90", "US", "+14155550100"},
	} {
		got, err := NormalizeNumber(tc.raw, tc.trunk, tc.country)
		require.NoError(t, err, tc.raw)
		require.Equal(t, tc.want, got, tc.raw)
	}
	for _, bad := range []string{"", "bob", "+", "+1234567890123456", "++1", "12a3", "+0123"} {
		_, err := NormalizeNumber(bad, "", "US")
		require.Error(t, err, bad)
	}
}

func FuzzNormalizeNumber(f *testing.F) {
	for _, s := range []string{"+14155550100", "0044 20 7946 0000", "02079460000", "sip:+1@x;y", "tel:123"} {
		f.Add(s, "0", "GB")
	}
	f.Fuzz(func(t *testing.T, raw, trunk, country string) {
		got, err := NormalizeNumber(raw, trunk, country)
		if err != nil {
			return
		}
		if !strings.HasPrefix(got, "+") || len(got) < 2 || len(got) > 16 {
			t.Fatalf("%q -> %q is not E.164", raw, got)
		}
		for _, r := range got[1:] {
			if r < '0' || r > '9' {
				t.Fatalf("%q -> %q is not E.164", raw, got)
			}
		}
		// Idempotent.
		again, err := NormalizeNumber(got, trunk, country)
		if err != nil || again != got {
			t.Fatalf("%q not stable: %q %v", got, again, err)
		}
	})
}
