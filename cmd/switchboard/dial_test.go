package main

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"switchboard/dtmf"
	"switchboard/media"
)

func TestParseDialTarget(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want dialTarget
		err  string
	}{
		{"sip:+14155550100@pbx.example.com", dialTarget{User: "+14155550100", Host: "pbx.example.com", Port: 5060}, ""},
		{"sip:+14155550100@127.0.0.1:5080", dialTarget{User: "+14155550100", Host: "127.0.0.1", Port: 5080}, ""},
		{"SIP:100@[::1]:5062;transport=TCP", dialTarget{User: "100", Host: "::1", Port: 5062, Transport: "tcp"}, ""},
		{"sip:100@[::1]", dialTarget{User: "100", Host: "::1", Port: 5060}, ""},
		{"100@10.0.0.1;user=phone;transport=udp?X-Foo=bar", dialTarget{User: "100", Host: "10.0.0.1", Port: 5060, Transport: "udp"}, ""},
		{"sip:alice@host:99999", dialTarget{}, "bad port"},
		{"sip:alice@host:0", dialTarget{}, "bad port"},
		{"sip:@host", dialTarget{}, "no number"},
		{"sip:host:5060", dialTarget{}, "no number"},
		{"sip:a b@host", dialTarget{}, "bad user"},
		{"sip:100@", dialTarget{}, "bad host"},
		{"sip:100@::1", dialTarget{}, "bad host"},
		{"sip:100@host;transport=tls", dialTarget{}, "transport \"tls\""},
		{"sips:100@host", dialTarget{}, "sips (TLS)"},
		{"tel:+14155550100", dialTarget{}, "want sip:"},
		{"http://host/", dialTarget{}, "want sip:"},
	} {
		t.Run(tc.in, func(t *testing.T) {
			got, err := parseDialTarget(tc.in)
			if tc.err != "" {
				require.ErrorIs(t, err, errBadTarget)
				require.ErrorContains(t, err, tc.err)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tc.want, got)
		})
	}
	got, err := parseDialTarget("sip:100@[::1]:5062")
	require.NoError(t, err)
	require.Equal(t, "sip:100@[::1]:5062", got.URI())
}

func FuzzParseDialTarget(f *testing.F) {
	for _, s := range []string{"sip:+14155550100@pbx.example.com:5060;transport=tcp", "100@[::1]", "sips:x@y", "sip:@:"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		tg, err := parseDialTarget(s)
		if err != nil {
			return
		}
		if tg.User == "" || tg.Host == "" || tg.Port <= 0 || tg.Port > 65535 {
			t.Fatalf("%q parsed to an unusable target %+v", s, tg)
		}
		again, err := parseDialTarget(tg.URI())
		if err != nil || again.User != tg.User || again.Host != tg.Host || again.Port != tg.Port {
			t.Fatalf("%q: URI %q does not parse back: %+v, %v", s, tg.URI(), again, err)
		}
	})
}

func TestParsePortRange(t *testing.T) {
	lo, hi, err := parsePortRange("30000-30999")
	require.NoError(t, err)
	require.Equal(t, []int{30000, 30999}, []int{lo, hi})
	for _, bad := range []string{"", "30000", "3-2", "0-10", "1-70000", "a-b"} {
		_, _, err := parsePortRange(bad)
		require.Error(t, err, bad)
	}
}

// TestEventSender drives the RFC 4733 sender the way the pacer does, one
// call per 20 ms frame, and checks what goes on the wire.
func TestEventSender(t *testing.T) {
	var sent []byte
	s := newEventSender("1#", 101, 20*time.Millisecond, func(d byte, _ time.Time) { sent = append(sent, d) })
	type pkt struct {
		ts      uint32
		marker  bool
		payload dtmf.Payload
	}
	var pkts []pkt
	var audio []uint32
	var p media.OutPacket
	for tick := range 40 {
		ts := 1000 + uint32(tick)*160
		if !s.NextPacket(ts, &p) {
			audio = append(audio, ts)
			continue
		}
		require.Equal(t, uint8(101), p.PayloadType)
		pl, err := dtmf.ParsePayload(p.Payload)
		require.NoError(t, err)
		pkts = append(pkts, pkt{p.Timestamp, p.Marker, pl})
	}
	// 100 ms key at 20 ms: 5 updates + 3 end packets, per digit.
	require.Len(t, pkts, 16)
	for d, code := range []uint8{1, 11} {
		key := pkts[d*8 : d*8+8]
		for i, k := range key {
			require.Equal(t, key[0].ts, k.ts, "one timestamp per key press (RFC 4733 2.5.1.1)")
			require.Equal(t, code, k.payload.Event)
			require.Equal(t, i == 0, k.marker)
			require.Equal(t, i >= 5, k.payload.End)
			if i < 5 {
				require.Equal(t, uint16(i*160), k.payload.Duration)
			} else {
				require.Equal(t, uint16(800), k.payload.Duration)
			}
		}
	}
	require.Equal(t, uint32(1000), pkts[0].ts)
	// The second key starts after a 100 ms gap (5 frames of audio).
	require.Equal(t, uint32(1000+13*160), pkts[8].ts)
	require.Equal(t, []uint32{1000 + 8*160, 1000 + 9*160, 1000 + 10*160, 1000 + 11*160, 1000 + 12*160}, audio[:5])
	require.Equal(t, "1#", string(sent))
	select {
	case <-s.Done():
	default:
		t.Fatal("Done not closed after the last digit")
	}
}
