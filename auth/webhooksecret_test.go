package auth

import (
	"encoding/base64"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"
	"github.com/stretchr/testify/require"
)

func TestNewWebhookSecretFormat(t *testing.T) {
	seen := make(map[string]bool)
	for range 200 {
		s := NewWebhookSecret()
		require.True(t, strings.HasPrefix(s, "whsec_"))
		key, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(s, "whsec_"))
		require.NoError(t, err)
		require.Len(t, key, 32)
		require.NoError(t, ValidateWebhookSecret(s))
		require.False(t, seen[s])
		seen[s] = true
	}
}

// TestWebhookSecretStandardWebhooks signs with our secret through the
// Standard Webhooks reference library and verifies the delivery, and checks
// that another secret and a tampered body are refused.
func TestWebhookSecretStandardWebhooks(t *testing.T) {
	secret := NewWebhookSecret()
	wh, err := standardwebhooks.NewWebhook(secret)
	require.NoError(t, err)

	payload := []byte(`{"type":"call.ended","data":{"call_id":"c_123"}}`)
	msgID := "msg_2KWPBgLlAfxdpx2AI54pPJ85f4W"
	ts := time.Now()
	sig, err := wh.Sign(msgID, ts, payload)
	require.NoError(t, err)
	require.True(t, strings.HasPrefix(sig, "v1,"))

	headers := http.Header{}
	headers.Set(standardwebhooks.HeaderWebhookID, msgID)
	headers.Set(standardwebhooks.HeaderWebhookTimestamp, strconv.FormatInt(ts.Unix(), 10))
	headers.Set(standardwebhooks.HeaderWebhookSignature, sig)
	require.NoError(t, wh.Verify(payload, headers))

	other, err := standardwebhooks.NewWebhook(NewWebhookSecret())
	require.NoError(t, err)
	require.ErrorIs(t, other.Verify(payload, headers), standardwebhooks.ErrNoMatchingSignature)

	tampered := append([]byte(nil), payload...)
	tampered[len(tampered)-3] = 'X'
	require.ErrorIs(t, wh.Verify(tampered, headers), standardwebhooks.ErrNoMatchingSignature)
}

func TestValidateWebhookSecret(t *testing.T) {
	b := func(n int) string { return base64.StdEncoding.EncodeToString(make([]byte, n)) }
	tests := []struct {
		name    string
		in      string
		wantErr bool
	}{
		{"24 bytes", "whsec_" + b(24), false},
		{"64 bytes", "whsec_" + b(64), false},
		{"23 bytes", "whsec_" + b(23), true},
		{"65 bytes", "whsec_" + b(65), true},
		{"no prefix", b(32), true},
		{"url base64", "whsec_" + strings.Repeat("-_", 22), true},
		{"raw base64", "whsec_" + base64.RawStdEncoding.EncodeToString(make([]byte, 32)), true},
		{"empty", "", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := ValidateWebhookSecret(tt.in)
			if tt.wantErr {
				require.ErrorIs(t, err, errWebhookSecret)
				return
			}
			require.NoError(t, err)
		})
	}
}
