package auth

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestTokenMeter: a key is over its tpm only when strictly over it, the
// wait is until enough of its minute has aged out, and other keys and
// unlimited keys are never refused.
func TestTokenMeter(t *testing.T) {
	m := NewTokenMeter()
	t0 := time.Unix(1_700_000_000, 0)
	m.Add("k", 60, t0)
	m.Add("k", 40, t0.Add(10*time.Second))
	over, _ := m.Exceeded("k", "100", t0.Add(10*time.Second))
	require.False(t, over, "exactly at the limit is allowed")
	m.Add("k", 1, t0.Add(20*time.Second))
	over, retry := m.Exceeded("k", "100", t0.Add(20*time.Second))
	require.True(t, over)
	require.Equal(t, 40*time.Second, retry, "the 60 tokens of t0 age out at t0+60s")
	over, _ = m.Exceeded("k", "100", t0.Add(60*time.Second))
	require.False(t, over)
	for _, tpm := range []string{"", "0", "x"} {
		over, _ = m.Exceeded("k", tpm, t0.Add(20*time.Second))
		require.False(t, over, tpm)
	}
	over, _ = m.Exceeded("other", "1", t0)
	require.False(t, over)
	var nilMeter *TokenMeter
	nilMeter.Add("k", 5, t0)
	over, _ = nilMeter.Exceeded("k", "1", t0)
	require.False(t, over)
}
