package dtmf

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestParseINFO(t *testing.T) {
	now := time.Unix(1_700_000_000, 0)
	tests := []struct {
		name, ct, body string
		digit          byte
		dur            time.Duration
		err            error
	}{
		{name: "relay", ct: "application/dtmf-relay", body: "Signal=5\r\nDuration=160\r\n", digit: '5', dur: 160 * time.Millisecond},
		{name: "relay LF, spaces, case", ct: "Application/DTMF-Relay; charset=utf-8", body: " signal = # \n DURATION= 250", digit: '#', dur: 250 * time.Millisecond},
		{name: "relay star", ct: "application/dtmf-relay", body: "Signal=*\r\nDuration=100", digit: '*', dur: 100 * time.Millisecond},
		{name: "relay 10 is star", ct: "application/dtmf-relay", body: "Signal=10\r\nDuration=100", digit: '*', dur: 100 * time.Millisecond},
		{name: "relay 11 is hash", ct: "application/dtmf-relay", body: "Signal=11", digit: '#'},
		{name: "relay 12-15 are A-D", ct: "application/dtmf-relay", body: "Signal=15", digit: 'D'},
		{name: "relay lower-case letter", ct: "application/dtmf-relay", body: "Signal=b", digit: 'B'},
		{name: "relay unknown keys ignored", ct: "application/dtmf-relay", body: "Foo=bar\r\nSignal=0\r\nnoise\r\n", digit: '0'},
		{name: "relay no signal", ct: "application/dtmf-relay", body: "Duration=160", err: errNoSignal},
		{name: "relay empty signal", ct: "application/dtmf-relay", body: "Signal=\r\n", err: errNoSignal},
		{name: "relay bad signal", ct: "application/dtmf-relay", body: "Signal=E", err: errBadSignal},
		{name: "relay 16 is not a key", ct: "application/dtmf-relay", body: "Signal=16", err: errBadSignal},
		{name: "relay bad duration", ct: "application/dtmf-relay", body: "Signal=1\r\nDuration=-5", err: errBadINFODuration},
		{name: "relay huge duration", ct: "application/dtmf-relay", body: "Signal=1\r\nDuration=999999", err: errBadINFODuration},
		{name: "dtmf", ct: "application/dtmf", body: "7", digit: '7'},
		{name: "dtmf with CRLF", ct: "application/dtmf", body: "#\r\n", digit: '#'},
		{name: "dtmf code", ct: "application/dtmf", body: "10", digit: '*'},
		{name: "dtmf empty", ct: "application/dtmf", body: "", err: errNoSignal},
		{name: "other type", ct: "application/sdp", body: "v=0", err: ErrUnsupportedContentType},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ev, err := ParseINFO(tc.ct, []byte(tc.body), now)
			if tc.err != nil {
				require.ErrorIs(t, err, tc.err)
				return
			}
			require.NoError(t, err)
			require.Equal(t, Event{Digit: tc.digit, Source: SourceINFO, At: now, Duration: tc.dur}, ev)
		})
	}
}

func FuzzParseINFO(f *testing.F) {
	f.Add("application/dtmf-relay", []byte("Signal=5\r\nDuration=160\r\n"))
	f.Add("application/dtmf", []byte("#"))
	f.Add("APPLICATION/DTMF-RELAY;x=y", []byte("signal=11"))
	f.Fuzz(func(t *testing.T, ct string, body []byte) {
		ev, err := ParseINFO(ct, body, time.Unix(1, 0))
		if err != nil {
			return
		}
		require.True(t, ValidDigit(ev.Digit))
		require.GreaterOrEqual(t, ev.Duration, time.Duration(0))
	})
}
