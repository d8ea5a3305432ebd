package agent

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestCanonicalLanguage(t *testing.T) {
	cases := []struct {
		in, want string
		ok       bool
	}{
		{"", "", true},
		{"en", "en", true},
		{"EN-us", "en-US", true},
		{"pt-br", "pt-BR", true},
		{"zh-hant-tw", "zh-Hant-TW", true},
		{"es-419", "es-419", true},
		{"Auto", "auto", true},
		{"english", "", false},
		{"e", "", false},
		{"en_US", "", false},
		{"en-", "", false},
	}
	for _, c := range cases {
		got, ok := CanonicalLanguage(c.in)
		require.Equal(t, c.ok, ok, c.in)
		require.Equal(t, c.want, got, c.in)
	}
}

func TestCatalog(t *testing.T) {
	require.True(t, KnownVoice("EVE"))
	require.True(t, KnownVoice(DefaultVoice))
	require.False(t, KnownVoice("bob"))
	require.True(t, KnownModel(DefaultModel))
	require.False(t, KnownModel("SVC-VOICE-LATEST"), "model ids are exact")
}

func FuzzCanonicalLanguage(f *testing.F) {
	for _, s := range []string{"en", "pt-BR", "zh-Hant-TW", "auto", "x-y", "en--US"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		c, ok := CanonicalLanguage(s)
		if !ok {
			return
		}
		again, ok := CanonicalLanguage(c)
		if !ok || again != c {
			t.Fatalf("not idempotent: %q → %q → %q", s, c, again)
		}
	})
}
