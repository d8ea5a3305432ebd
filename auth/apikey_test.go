package auth

import (
	"crypto/sha256"
	"encoding/hex"
	"math"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestNewKeySecretFormat(t *testing.T) {
	for _, tt := range []struct {
		name   string
		gen    func() string
		prefix string
		kind   TokenKind
	}{
		{"api key", NewKeySecret, APIKeyPrefix, TokenAPIKey},
		{"client secret", NewClientSecret, ClientSecretPrefix, TokenClientSecret},
	} {
		t.Run(tt.name, func(t *testing.T) {
			seen := make(map[string]bool)
			for range 1000 {
				s := tt.gen()
				require.True(t, strings.HasPrefix(s, tt.prefix), s)
				body := s[len(tt.prefix):]
				require.Len(t, body, 48)
				for i := 0; i < len(body); i++ {
					require.True(t, isBase62(body[i]), "char %q in %s", body[i], s)
				}
				require.Equal(t, tt.kind, KindOf(s))
				require.False(t, seen[s], "duplicate %s", s)
				seen[s] = true
			}
		})
	}
	// 48 base62 characters carry at least 256 bits.
	require.GreaterOrEqual(t, 48*math.Log2(62), 256.0)
}

// TestKeySecretDistribution checks that every base62 character occurs at
// close to its uniform share: a biased or truncated alphabet fails.
func TestKeySecretDistribution(t *testing.T) {
	counts := make(map[byte]int)
	const n = 4000
	for range n {
		s := NewKeySecret()[len(APIKeyPrefix):]
		for i := 0; i < len(s); i++ {
			counts[s[i]]++
		}
	}
	require.Len(t, counts, 62, "all 62 characters appear")
	expected := float64(n*48) / 62 // ≈ 3097
	for c, got := range counts {
		// 6σ bound of a binomial count: sqrt(3097) ≈ 56, so ±340.
		require.InDelta(t, expected, float64(got), 6*math.Sqrt(expected), "character %q", c)
	}
}

func TestHashKey(t *testing.T) {
	s := NewKeySecret()
	h := HashKey(s)
	sum := sha256.Sum256([]byte(s))
	require.Equal(t, hex.EncodeToString(sum[:]), h)
	require.Len(t, h, 64)
	require.Equal(t, h, HashKey(s), "deterministic, so it can be an index")
	require.NotEqual(t, h, HashKey(NewKeySecret()))
	require.NotContains(t, h, s[len(APIKeyPrefix):len(APIKeyPrefix)+8])

	require.True(t, VerifyKey(s, h))
	require.False(t, VerifyKey(s+"x", h))
	require.False(t, VerifyKey(NewKeySecret(), h))
	require.False(t, VerifyKey(s, ""))
}

func TestConstantTimeEqual(t *testing.T) {
	tests := []struct {
		a, b string
		want bool
	}{
		{"", "", true},
		{"abc", "abc", true},
		{"abc", "abd", false},
		{"abc", "ab", false},
		{"", "a", false},
	}
	for _, tt := range tests {
		require.Equal(t, tt.want, ConstantTimeEqual(tt.a, tt.b), "%q vs %q", tt.a, tt.b)
	}
}

func TestRedact(t *testing.T) {
	tests := []struct {
		name, in, want string
	}{
		{"api key", "sb-Ab1" + strings.Repeat("Q", 41) + "xyz9", "sb-Ab1…xyz9"},
		{"client secret", "sbcs-Cd2" + strings.Repeat("Q", 41) + "wxy8", "sbcs-Cd2…wxy8"},
		{"unknown prefix long", strings.Repeat("k", 40), "kkk…kkkk"},
		{"short api key", "sb-abcdefgh", "sb-…"},
		{"empty", "", "…"},
		{"just prefix", "sb-", "sb-…"},
		{"non ascii", "sb-" + strings.Repeat("é", 20), "sb-…"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			require.Equal(t, tt.want, Redact(tt.in))
		})
	}
}

// TestRedactRevealsAtMostSeven checks, over many real secrets, that the
// redacted form shows at most 7 characters of the body and never a run that
// would help rebuild it.
func TestRedactRevealsAtMostSeven(t *testing.T) {
	for _, gen := range []func() string{NewKeySecret, NewClientSecret} {
		for range 500 {
			s := gen()
			r := Redact(s)
			prefix := APIKeyPrefix
			if KindOf(s) == TokenClientSecret {
				prefix = ClientSecretPrefix
			}
			require.True(t, strings.HasPrefix(r, prefix))
			shown := strings.ReplaceAll(strings.TrimPrefix(r, prefix), "…", "")
			require.LessOrEqual(t, len(shown), 7, r)
			require.NotContains(t, r, s[len(prefix):len(prefix)+8], "no 8-char run of the body")
			require.Equal(t, TokenUnknown, KindOf(r), "a redacted key is not a key")
		}
	}
}

func TestKindOf(t *testing.T) {
	body := strings.Repeat("a", 48)
	tests := []struct {
		in   string
		want TokenKind
	}{
		{"sb-" + body, TokenAPIKey},
		{"sbcs-" + body, TokenClientSecret},
		{"sb-" + body[:47], TokenUnknown},
		{"sb-" + body + "a", TokenUnknown},
		{"sb-" + body[:47] + "-", TokenUnknown},
		{"sb-" + body[:47] + "_", TokenUnknown},
		{"SB-" + body, TokenUnknown},
		{"sbcs_" + body, TokenUnknown},
		{"whsec_" + body, TokenUnknown},
		{body, TokenUnknown},
		{"", TokenUnknown},
		{"sb-", TokenUnknown},
	}
	for _, tt := range tests {
		require.Equal(t, tt.want, KindOf(tt.in), "%q", tt.in)
	}
	require.Equal(t, "api_key", TokenAPIKey.String())
	require.Equal(t, "client_secret", TokenClientSecret.String())
	require.Equal(t, "unknown", TokenUnknown.String())
}

func BenchmarkNewKeySecret(b *testing.B) {
	for b.Loop() {
		_ = NewKeySecret()
	}
}

func BenchmarkHashKey(b *testing.B) {
	s := NewKeySecret()
	for b.Loop() {
		_ = HashKey(s)
	}
}

func BenchmarkKindOf(b *testing.B) {
	s := NewClientSecret()
	for b.Loop() {
		_ = KindOf(s)
	}
}
