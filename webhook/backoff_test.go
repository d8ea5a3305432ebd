package webhook

import (
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestBackoff(t *testing.T) {
	o := Options{Jitter: -1}.withDefaults()
	want := []time.Duration{250 * time.Millisecond, 500 * time.Millisecond, time.Second, 2 * time.Second, 2 * time.Second, 2 * time.Second}
	for i, w := range want {
		require.Equal(t, w, o.backoff(i+1), "failure %d", i+1)
	}
	require.Equal(t, 2*time.Second, o.backoff(1000), "no overflow")

	j := Options{}.withDefaults()
	for n := 1; n <= 5; n++ {
		full := o.backoff(n)
		for range 200 {
			got := j.backoff(n)
			require.GreaterOrEqual(t, got, time.Duration(float64(full)*(1-DefaultJitter)))
			require.LessOrEqual(t, got, full)
		}
	}
}

func TestRetryable(t *testing.T) {
	for s := 100; s < 600; s++ {
		want := s >= 500 || s == 408 || s == 409 || s == 425 || s == 429
		require.Equal(t, want, retryable(s), strconv.Itoa(s))
	}
}

func TestRetryAfter(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	tests := []struct {
		value string
		want  time.Duration
	}{
		{"", 0},
		{"3", 3 * time.Second},
		{" 7 ", 7 * time.Second},
		{"0", 0},
		{"-4", 0},
		{"soon", 0},
		{"1.5", 0},
		{"999999999", 24 * time.Hour},
		{now.Add(90 * time.Second).Format(http.TimeFormat), 90 * time.Second},
		{now.Add(-time.Minute).Format(http.TimeFormat), 0},
	}
	for _, tt := range tests {
		t.Run(tt.value, func(t *testing.T) {
			h := http.Header{}
			if tt.value != "" {
				h.Set("Retry-After", tt.value)
			}
			require.Equal(t, tt.want, retryAfter(h, now))
		})
	}
}

func FuzzRetryAfter(f *testing.F) {
	for _, s := range []string{"3", "0", "-1", "Fri, 02 Jan 2026 03:04:05 GMT", "x", "99999999999999999999"} {
		f.Add(s)
	}
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	f.Fuzz(func(t *testing.T, s string) {
		h := http.Header{}
		h.Set("Retry-After", s)
		d := retryAfter(h, now)
		require.GreaterOrEqual(t, d, time.Duration(0))
	})
}
