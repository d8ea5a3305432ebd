package auth

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestOldSecretExpiry(t *testing.T) {
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	tests := []struct {
		name      string
		requested time.Time
		grace     time.Duration
		want      time.Time
		wantErr   bool
	}{
		{"default 24h", time.Time{}, 0, now.Add(24 * time.Hour), false},
		{"configured grace", time.Time{}, time.Hour, now.Add(time.Hour), false},
		{"grace capped at 7 days", time.Time{}, 30 * 24 * time.Hour, now.Add(7 * 24 * time.Hour), false},
		{"requested", now.Add(2 * time.Hour), 0, now.Add(2 * time.Hour), false},
		{"requested exactly 7 days", now.Add(7 * 24 * time.Hour), 0, now.Add(7 * 24 * time.Hour), false},
		{"requested beyond 7 days", now.Add(7*24*time.Hour + time.Second), 0, time.Time{}, true},
		{"requested now", now, 0, time.Time{}, true},
		{"requested in the past", now.Add(-time.Minute), 0, time.Time{}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := OldSecretExpiry(now, tt.requested, tt.grace)
			if tt.wantErr {
				require.ErrorIs(t, err, errOldSecretExpiry)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tt.want, got)
		})
	}
}
